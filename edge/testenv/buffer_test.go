package testenv

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestBuffer(t *testing.T) {
	t.Parallel()
	var b Buffer
	log := b.Logger(slog.LevelInfo)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.Info("written", "by", "goroutine")
			log.Debug("below the level")
			_ = b.String()
		}()
	}
	wg.Wait()
	out := b.String()
	if n := strings.Count(out, "msg=written"); n != 4 || strings.Contains(out, "below the level") {
		t.Fatalf("Buffer holds %d info lines, want 4 and no debug line:\n%s", n, out)
	}
}

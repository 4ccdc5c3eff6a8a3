package skills

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

func TestRunDetached(t *testing.T) {
	t.Run("answer", func(t *testing.T) {
		released := make(chan struct{})
		out, ok := RunDetached(context.Background(), "t", func() { close(released) }, func() Output { return Output{Content: []Block{TextBlock("hi")}} })
		if !ok || out.Text() != "hi" {
			t.Fatalf("RunDetached = %+v, %v", out, ok)
		}
		<-released // the goroutine let go of its slot
	})
	t.Run("panic", func(t *testing.T) {
		out, ok := RunDetached(context.Background(), "boom", func() {}, func() Output { panic("bad index") })
		if !ok || out.ErrorType() != wire.ErrInternal || !strings.Contains(out.ErrorText(), `tool "boom" crashed: bad index`) {
			t.Fatalf("RunDetached of a panic = %+v, %v", out, ok)
		}
	})
	t.Run("abandoned", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		unblock, released := make(chan struct{}), make(chan struct{})
		out, ok := RunDetached(ctx, "stuck", func() { close(released) }, func() Output { <-unblock; return Output{Content: []Block{TextBlock("late")}} })
		if ok {
			t.Fatalf("RunDetached of a stuck call answered %+v", out)
		}
		select {
		case <-released:
			t.Fatal("the slot was released while the call still runs")
		default:
		}
		close(unblock)
		<-released
	})
}

package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// evoclawBinary builds cmd/evoclaw once per test run: the scenarios' agents
// and broker are real processes of it.
func evoclawBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "evoclaw-chaos-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "evoclaw")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/evoclaw/evoclaw/cmd/evoclaw").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

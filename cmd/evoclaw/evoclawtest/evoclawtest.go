// Package evoclawtest builds the evoclaw binary for tests whose agents,
// brokers and nodes run as real processes of it.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package evoclawtest

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

// Binary builds cmd/evoclaw once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "evoclaw-test-bin-")
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

// Main runs the tests and removes the built binary; call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the built binary; call it after m.Run in a TestMain
// that does more than Main.
func Cleanup() {
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}

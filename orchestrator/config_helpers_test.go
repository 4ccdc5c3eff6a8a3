package orchestrator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// writeConfig writes body as dir/evoclaw.toml and returns its path.
func writeConfig(t testing.TB, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "evoclaw.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadConfig writes body as dir/evoclaw.toml and loads it (testenv.LoadFile).
func loadConfig(t testing.TB, dir, body, want string) (Config, bool) {
	t.Helper()
	return testenv.LoadFile(t, filepath.Join(dir, "evoclaw.toml"), body, want, LoadConfig)
}

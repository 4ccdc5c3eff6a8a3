package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// loadConfig writes body as dir/evoclaw.toml and loads it. With want set,
// it expects an error mentioning want and returns false; with want empty,
// any error fails the test.
func loadConfig(t testing.TB, dir, body, want string) (Config, bool) {
	t.Helper()
	c, err := LoadConfig(writeConfig(t, dir, body))
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("LoadConfig = %v, want an error mentioning %q", err, want)
		}
		return c, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

package edge

import (
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// loadConfig writes body as dir/agent.toml and loads it (testenv.LoadFile).
func loadConfig(t testing.TB, dir, body, want string) (Config, bool) {
	t.Helper()
	return testenv.LoadFile(t, filepath.Join(dir, "agent.toml"), body, want, LoadConfig)
}

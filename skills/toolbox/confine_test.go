//go:build linux

package toolbox

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// newLogged builds a Box with cfg and returns what it logged.
func newLogged(t *testing.T, cfg Config) (*Box, string) {
	t.Helper()
	var buf bytes.Buffer
	box, err := New(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { box.Close() })
	return box, buf.String()
}

// TestSandboxAuto: by default bash runs in bubblewrap where it works, and
// unconfined with a warning where it is missing or broken.
func TestSandboxAuto(t *testing.T) {
	ws := t.TempDir()
	b := Builtin{Groups: []string{"coding"}, Workspace: ws}
	if errs := b.Validate("builtin"); len(errs) > 0 || b.Sandbox != "auto" {
		t.Fatalf("default sandbox = %q %v, want auto", b.Sandbox, errs)
	}

	t.Run("missing", func(t *testing.T) {
		box, logged := newLogged(t, Config{Permissions: []string{"shell"}, Builtin: b, LookPath: func(string) (string, error) { return "", errors.New("not in PATH") }})
		if !strings.Contains(logged, "level=WARN") || !strings.Contains(logged, "bash runs UNCONFINED") || !strings.Contains(logged, "not in PATH") {
			t.Errorf("no loud warning:\n%s", logged)
		}
		if out := box.Tools.Call(context.Background(), "bash", map[string]any{"command": "echo ran"}); out.Text() != "ran\n" {
			t.Errorf("unconfined bash = %q", out.Text())
		}
	})
	t.Run("broken", func(t *testing.T) {
		fake := filepath.Join(t.TempDir(), "bwrap")
		os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755)
		_, logged := newLogged(t, Config{Permissions: []string{"shell"}, Builtin: b, LookPath: func(string) (string, error) { return fake, nil }})
		if !strings.Contains(logged, "bash runs UNCONFINED") || !strings.Contains(logged, "uid map") {
			t.Errorf("no loud warning naming the failure:\n%s", logged)
		}
	})
	t.Run("bubblewrap", func(t *testing.T) {
		testenv.Find(t, "bwrap", "bubblewrap")
		box, logged := newLogged(t, Config{Builtin: b})
		if strings.Contains(logged, "UNCONFINED") {
			t.Errorf("warned although bubblewrap works:\n%s", logged)
		}
		out := box.Tools.Call(context.Background(), "bash", map[string]any{"command": "ls /root /home /run 2>&1 | wc -l; cat /etc/shadow 2>&1"})
		if strings.Contains(out.Text(), "root:") {
			t.Errorf("auto-sandboxed bash read /etc/shadow: %q", out.Text())
		}
	})
	t.Run("none", func(t *testing.T) {
		nb := b
		nb.Sandbox = "none"
		_, logged := newLogged(t, Config{Builtin: nb})
		if !strings.Contains(logged, "bash runs UNCONFINED: builtin.sandbox is none") {
			t.Errorf("no warning for explicit none:\n%s", logged)
		}
	})
}

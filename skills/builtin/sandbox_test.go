//go:build linux

package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/internal/opstest"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// TestBashSandboxed runs the bash tool inside bubblewrap: the workspace is
// writable, nothing else is, and there is no network.
func TestBashSandboxed(t *testing.T) {
	testenv.Find(t, "bwrap", "bubblewrap")
	ws, outside := t.TempDir(), t.TempDir()
	tool, err := builtin.NewBash(builtin.Options{Dir: ws, Sandbox: sandbox.Bubblewrap})
	if err != nil {
		t.Fatal(err)
	}
	ts := opstest.Toolset(t, tool)
	cmd := "echo ok > in.txt && echo wrote; touch " + outside + "/out.txt 2>/dev/null && echo ESCAPED || echo denied; " +
		"tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
	out := ts.Call(context.Background(), "bash", map[string]any{"command": cmd})
	if out.ErrorType() != "" || !strings.Contains(out.Text(), "wrote\ndenied\nlo") {
		t.Fatalf("sandboxed bash = %q %+v", out.Text(), out.Content)
	}
	if _, err := os.Stat(filepath.Join(ws, "in.txt")); err != nil {
		t.Fatalf("workspace write did not land: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Fatal("sandboxed bash wrote outside the workspace")
	}
}

func TestBashSandboxMissing(t *testing.T) {
	ws := t.TempDir()
	exec := builtin.LocalExec{Dir: ws, Sandbox: sandbox.Firejail, LookPath: func(string) (string, error) { return "", os.ErrNotExist }}
	tool, err := builtin.NewBash(builtin.Options{Dir: ws, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	ts := opstest.Toolset(t, tool)
	out := ts.Call(context.Background(), "bash", map[string]any{"command": "touch ran"})
	if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.Wire("bash").Error, "firejail") {
		t.Fatalf("missing sandbox = %+v", out.Content)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the command ran without its sandbox")
	}
}

// TestBashSandboxNetwork: with Network set, the sandboxed command sees the
// host's interfaces, not only its own loopback.
func TestBashSandboxNetwork(t *testing.T) {
	testenv.Find(t, "bwrap", "bubblewrap")
	host, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	tool, err := builtin.NewBash(builtin.Options{Dir: t.TempDir(), Sandbox: sandbox.Bubblewrap, Network: true})
	if err != nil {
		t.Fatal(err)
	}
	out := tool.Run(context.Background(), map[string]any{"command": "cat /proc/net/dev | wc -l"})
	if got, want := strings.TrimSpace(out.Text()), strings.Count(string(host), "\n"); got != strconv.Itoa(want) {
		t.Fatalf("sandboxed bash with network sees %s lines of /proc/net/dev, the host %d", got, want)
	}
}

// TestBashSandboxEscape replays the attack on the bash tool: remount the
// read-only root writable, write outside the workspace, read secrets.
func TestBashSandboxEscape(t *testing.T) {
	for _, e := range []struct{ kind, program, pkg string }{{sandbox.Bubblewrap, "bwrap", "bubblewrap"}, {sandbox.Firejail, "firejail", "firejail"}} {
		t.Run(e.kind, func(t *testing.T) {
			testenv.Find(t, e.program, e.pkg)
			ws, outside := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "http-token"), []byte("SECRET-TOKEN\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			tool, err := builtin.NewBash(builtin.Options{Dir: ws, Sandbox: e.kind})
			if err != nil {
				t.Fatal(err)
			}
			cmd := "mount -o remount,rw / 2>&1; mount -o remount,rw " + outside + " 2>&1; touch " + outside + "/planted 2>&1; " +
				"cat " + outside + "/http-token /etc/shadow 2>&1; ls -A /root /run 2>&1; echo end"
			out := tool.Run(context.Background(), map[string]any{"command": cmd})
			if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
				t.Errorf("wrote outside the workspace:\n%s", out.Text())
			}
			for _, leak := range []string{"SECRET-TOKEN", "root:*:", "root:$", "root:!", "dbus", "systemd"} {
				if strings.Contains(out.Text(), leak) {
					t.Errorf("sandboxed bash saw %q:\n%s", leak, out.Text())
				}
			}
			if !strings.Contains(out.Text(), "end") {
				t.Errorf("command did not run: %+v", out)
			}
		})
	}
}

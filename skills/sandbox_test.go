//go:build linux

package skills

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/internal/proctest"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// probeScript reports what the sandbox let it do: write the workspace
// ($1 after --ws), write elsewhere (--outside), write its own skill
// directory, and which network interfaces it sees.
const probeScript = `ws=$4; outside=$2
echo x > "$ws/written" && echo ws-writable || echo ws-readonly
touch "$outside/escape" 2>/dev/null && echo outside-writable || echo outside-readonly
touch "$(dirname "$0")/planted" 2>/dev/null && echo skill-writable || echo skill-readonly
echo "net: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')"`

// hostInterfaces lists this machine's network interfaces as the probe
// prints them.
func hostInterfaces(t *testing.T) string {
	b, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")[2:]
	var names []string
	for _, l := range lines {
		name, _, _ := strings.Cut(l, ":")
		names = append(names, strings.TrimSpace(name))
	}
	sort.Strings(names)
	return "net: " + strings.Join(names, " ") + " "
}

func sandboxedProbe(t *testing.T, kind string, perms ...string) Tool {
	t.Helper()
	tool := scriptTool(t, probeScript, 0o755)
	tool.Sandboxing = kind
	tool.Permissions = perms
	tool.Parameters.Properties = map[string]Param{"ws": {Type: TypeString}, "outside": {Type: TypeString}}
	return tool
}

func TestExecuteSandboxed(t *testing.T) {
	// Control: unsandboxed, the probe can write anywhere and sees every
	// interface, so its "readonly" answers below mean something.
	ws, outside := t.TempDir(), t.TempDir()
	out := flatExecute(context.Background(), sandboxedProbe(t, SandboxNone), map[string]any{"ws": ws, "outside": outside}, ExecOptions{})
	if !strings.Contains(out.Result, "outside-writable") || !strings.Contains(out.Result, "skill-writable") || !strings.Contains(out.Result, hostInterfaces(t)) {
		t.Fatalf("unsandboxed control probe:\n%s", out.Result)
	}
	for _, tc := range []struct{ kind, program, pkg string }{
		{SandboxBubblewrap, "bwrap", "bubblewrap"},
		{SandboxFirejail, "firejail", "firejail"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			testenv.Find(t, tc.program, tc.pkg)
			host := hostInterfaces(t)
			for _, network := range []bool{false, true} {
				var perms []string
				if network {
					perms = []string{PermissionNetwork}
				}
				ws, outside := t.TempDir(), t.TempDir()
				tool := sandboxedProbe(t, tc.kind, perms...)
				out := flatExecute(context.Background(), tool, map[string]any{"ws": ws, "outside": outside},
					ExecOptions{Workspace: ws, Granted: perms})
				if out.Status != wire.StatusSuccess {
					t.Fatalf("sandboxed probe failed: %+v", out)
				}
				for _, want := range []string{"ws-writable", "outside-readonly", "skill-readonly"} {
					if !strings.Contains(out.Result, want) {
						t.Errorf("network=%v: probe output lacks %q:\n%s", network, want, out.Result)
					}
				}
				if _, err := os.Stat(filepath.Join(outside, "escape")); err == nil {
					t.Errorf("network=%v: the sandboxed tool wrote outside the workspace", network)
				}
				netLine := out.Result[strings.Index(out.Result, "net: "):]
				switch {
				case !network && strings.TrimSpace(netLine) != "net: lo" && strings.TrimSpace(netLine) != "net:":
					t.Errorf("without the network permission the tool sees interfaces %q, want only loopback", netLine)
				case network && strings.TrimSpace(netLine) != strings.TrimSpace(host):
					t.Errorf("with the network permission the tool sees %q, want the host's %q", netLine, host)
				}
			}
		})
	}
}

func TestExecuteSandboxMissing(t *testing.T) {
	tool := sandboxedProbe(t, SandboxBubblewrap)
	notFound := func(string) (string, error) { return "", errors.New("not in PATH") }
	out := flatExecute(context.Background(), tool, map[string]any{"ws": "/x", "outside": "/y"}, ExecOptions{LookPath: notFound})
	check(t, out, wire.StatusError, wire.ErrExecutionFailed, `sandboxing "bubblewrap" needs bwrap, which was not found`, nil)
	if out.ExitCode != nil {
		t.Fatalf("the tool ran unsandboxed: %+v", out)
	}
	if !strings.Contains(out.Error, sandbox.ErrUnavailable.Error()) {
		t.Fatalf("error %q does not name the cause", out.Error)
	}
}

// TestExecuteSandboxTimeoutKillsAll checks that a timeout reaches the
// processes inside the sandbox, not only the sandbox program.
func TestExecuteSandboxTimeoutKillsAll(t *testing.T) {
	testenv.Find(t, "bwrap", "bubblewrap")
	tool := scriptTool(t, `sleep 61.4242 & wait`, 0o755)
	tool.Sandboxing = SandboxBubblewrap
	tool.TimeoutMS = 300
	out := flatExecute(context.Background(), tool, nil, ExecOptions{})
	check(t, out, wire.StatusError, wire.ErrTimeout, "timed out", ptr(-1))
	// The sleep's pid lives in the sandbox's pid namespace; look for its
	// (unique) command line among all processes instead.
	proctest.WaitGone(t, "sleep", "61.4242")
}

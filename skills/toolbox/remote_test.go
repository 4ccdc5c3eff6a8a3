//go:build linux

package toolbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/internal/sshdtest"
)

func TestBuiltinRemoteValidate(t *testing.T) {
	ok := &Remote{Addr: "h:22", User: "u", KeyFile: "/k", KnownHosts: "/kh", Dir: "/srv/ws"}
	tests := []struct {
		name string
		b    Builtin
		want string // substring of the error; "" = valid
	}{
		{"remote alone", Builtin{Groups: []string{builtin.GroupRemote}, Remote: ok}, ""},
		{"remote without its table", Builtin{Groups: []string{builtin.GroupRemote}}, "builtin.remote: required"},
		{"table without the group", Builtin{Groups: []string{"coding"}, Workspace: "/w", Remote: ok}, "does not include"},
		{"mixed with a local group", Builtin{Groups: []string{"coding", builtin.GroupRemote}, Workspace: "/w", Remote: ok}, "use it alone"},
		{"missing fields", Builtin{Groups: []string{builtin.GroupRemote}, Remote: &Remote{Dir: "rel"}}, "builtin.remote.addr: required"},
		{"relative remote dir", Builtin{Groups: []string{builtin.GroupRemote}, Remote: &Remote{Addr: "h:22", User: "u", KeyFile: "/k", KnownHosts: "/kh", Dir: "rel"}}, "builtin.remote.dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := errorsOf(tt.b.Validate("builtin"))
			if tt.want == "" {
				if err != "" {
					t.Fatal(err)
				}
				return
			}
			if !strings.Contains(err, tt.want) {
				t.Fatalf("errors %q, want %q", err, tt.want)
			}
		})
	}
}

func errorsOf(errs []error) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "; ")
}

// TestRemoteGroupOverSSH configures [builtin.remote] against a real sshd:
// the remote group's tools work in the remote directory and cannot leave it.
func TestRemoteGroupOverSSH(t *testing.T) {
	srv := sshdtest.Start(t)
	ws := t.TempDir() // the "remote" host is this machine over SSH
	if err := os.WriteFile(filepath.Join(ws, "plan.txt"), []byte("water the tomatoes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	box, err := New(Config{Permissions: []string{"file_read", "file_write", "shell"}, Builtin: Builtin{Groups: []string{builtin.GroupRemote},
		Remote: &Remote{Addr: srv.Addr, User: srv.User, KeyFile: srv.KeyFile, KnownHosts: srv.KnownHosts, Dir: ws}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(box.Tools.Names()) != 0 {
		t.Fatalf("remote tools offered before Connect: %v", box.Tools.Names())
	}
	box.Connect(context.Background())
	defer box.Close()
	if got := strings.Join(box.Tools.Names(), ","); got != "bash,edit,find,grep,read,write" {
		t.Fatalf("tools %s", got)
	}
	out := box.Tools.CallJSON(context.Background(), "read", json.RawMessage(`{"path":"plan.txt"}`))
	if out.ErrorType() != "" || !strings.Contains(out.Text(), "water the tomatoes") {
		t.Fatalf("read %+v", out)
	}
	out = box.Tools.CallJSON(context.Background(), "read", json.RawMessage(`{"path":"../../../etc/passwd"}`))
	if out.ErrorType() != wire.ErrPermissionDenied {
		t.Fatalf("escape: %+v", out)
	}
	if err := box.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRemoteHostDownLeavesTheRestServing: an unreachable SSH host is
// logged and its tools left out; New and Connect do not fail the node.
func TestRemoteHostDownLeavesTheRestServing(t *testing.T) {
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	box, err := New(Config{Permissions: []string{"file_read", "file_write", "shell"}, Builtin: Builtin{Groups: []string{builtin.GroupRemote},
		Remote: &Remote{Addr: "127.0.0.1:1", User: "nobody", KeyFile: filepath.Join(dir, "none"), KnownHosts: kh, Dir: "/srv"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	box.Connect(context.Background())
	defer box.Close()
	if n := box.Tools.Names(); len(n) != 0 {
		t.Fatalf("tools of an unreachable host offered: %v", n)
	}
}

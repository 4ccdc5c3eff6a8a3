//go:build linux

package sandbox_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/skills/sandbox"
	"github.com/evoclaw/evoclaw/skills/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.ActAsProbe()
	os.Exit(m.Run())
}

// engines are the sandboxes under test, with the program each needs.
var engines = []struct{ kind, program, pkg string }{
	{sandbox.Bubblewrap, "bwrap", "bubblewrap"},
	{sandbox.Firejail, "firejail", "firejail"},
}

// TestConfinedPrivileges: a sandboxed tool holds no capability and cannot
// gain one, so it can neither remount the read-only file system nor make
// device nodes, raw sockets, foreign owners or another uid.
func TestConfinedPrivileges(t *testing.T) {
	for _, e := range engines {
		t.Run(e.kind, func(t *testing.T) {
			testenv.Find(t, e.program, e.pkg)
			w := sandboxtest.NewWorld(t)
			mine := filepath.Join(w.WS, "mine.txt")
			got := w.Run(t, e.kind, "caps:", "remount:/", "remount:"+w.WS, "bindmount:"+w.WS, "mknod:"+filepath.Join(w.WS, "null2"),
				"raw:", "packet:", "chown:"+mine, "setuid:")
			for op, res := range got {
				if !strings.HasPrefix(res, "denied") && op != "caps:" {
					t.Errorf("%s: %s, want denied", op, res)
				}
			}
			if got["caps:"] != "ok" {
				t.Errorf("capabilities inside the sandbox: %s", got["caps:"])
			}
			// A write outside the workspace after the remount attempt.
			res := w.Run(t, e.kind, "write:"+filepath.Join(w.Data, "planted"), "write:"+filepath.Join(w.WS, "ok.txt"))
			if _, err := os.Stat(filepath.Join(w.Data, "planted")); err == nil {
				t.Errorf("wrote outside the workspace: %v", res)
			}
			if res["write:"+filepath.Join(w.WS, "ok.txt")] != "ok" {
				t.Errorf("cannot write the workspace: %v", res)
			}
		})
	}
}

// TestConfinedVisibility: a sandboxed tool reads only the system, its
// skill directory and its workspace; secrets, homes, runtime directories
// and host sockets are out of its sight.
func TestConfinedVisibility(t *testing.T) {
	for _, e := range engines {
		t.Run(e.kind, func(t *testing.T) {
			testenv.Find(t, e.program, e.pkg)
			w := sandboxtest.NewWorld(t)
			hidden := []string{
				"read:/etc/shadow", "read:/etc/gshadow", "list:/root", "list:/home", "list:/var/run", "list:/var/lib",
				"read:" + filepath.Join(w.Data, "http-token"), "read:" + filepath.Join(w.Data, "mqtt-users"), "list:" + w.Data,
				"read:" + filepath.Join(w.Home, ".ssh-key"), "list:" + w.Home, "list:/sys/fs/cgroup",
				"dial:/run/dbus/system_bus_socket", "dial:/var/run/docker.sock", "dial:/run/systemd/private",
			}
			for _, s := range w.Sockets {
				hidden = append(hidden, "dial:"+s, "exists:"+s)
			}
			visible := []string{
				"read:/etc/passwd", "read:/etc/hosts", "list:/usr/bin", "read:/bin/sh", "list:" + w.WS,
				"read:" + filepath.Join(w.WS, "mine.txt"), "list:" + w.Skill, "write:" + filepath.Join(w.WS, "new.txt"),
				"write:/tmp/scratch", "entries:/run", "nosockets:/",
			}
			got := w.Run(t, e.kind, append(hidden, visible...)...)
			for _, op := range hidden {
				// Some of these do not exist on every host; absent or
				// refused, the tool cannot reach them either way.
				if !strings.HasPrefix(got[op], "denied") {
					t.Errorf("%s: %s, want denied", op, got[op])
				}
			}
			for _, op := range visible {
				if got[op] != "ok" {
					t.Errorf("%s: %s, want ok", op, got[op])
				}
			}
		})
	}
}

// TestConfinedShell: the ordinary work of a tool still works: sh, cat
// and ls on the workspace, writing there.
func TestConfinedShell(t *testing.T) {
	for _, e := range engines {
		t.Run(e.kind, func(t *testing.T) {
			testenv.Find(t, e.program, e.pkg)
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			prog, args, err := sandbox.Wrap(sandbox.Policy{Kind: e.kind, Writable: []string{ws}}, "/bin/sh",
				[]string{"-c", "cat in.txt && ls && echo done > out.txt && sort < in.txt | wc -l && awk 'BEGIN{print 1+1}'"}, ws)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(prog, args...)
			cmd.Dir = ws
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			if err != nil || string(out) != "hello\nin.txt\n1\n2\n" {
				t.Fatalf("shell in %s: %v\n%q", e.kind, err, out)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "done\n" {
				t.Fatalf("workspace write: %q %v", b, err)
			}
		})
	}
}

// TestProbe: a working sandbox passes, a missing one is sandbox.ErrUnavailable, a
// broken one (here a fake bwrap that fails like one without user
// namespaces) is an error carrying its message.
func TestProbe(t *testing.T) {
	for _, e := range engines {
		t.Run(e.kind, func(t *testing.T) {
			testenv.Find(t, e.program, e.pkg)
			if err := sandbox.Probe(context.Background(), e.kind, nil); err != nil {
				t.Fatalf("probe of a working %s: %v", e.kind, err)
			}
		})
	}
	missing := func(string) (string, error) { return "", errors.New("not in PATH") }
	if err := sandbox.Probe(context.Background(), sandbox.Bubblewrap, missing); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("missing bwrap: %v", err)
	}
	fake := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := sandbox.Probe(context.Background(), sandbox.Bubblewrap, func(string) (string, error) { return fake, nil })
	if err == nil || errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "new namespace") {
		t.Errorf("broken bwrap: %v", err)
	}
}

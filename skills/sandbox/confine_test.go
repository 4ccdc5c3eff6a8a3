//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// probeEnv makes the test binary act as the probe: a tool that tries, from
// inside a sandbox, what an attacker would, and prints one line per try.
const probeEnv = "EVOCLAW_SANDBOX_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) == "1" {
		probe(os.Args[1:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// probe runs each "op:arg" of args and prints "op:arg ok" or
// "op:arg denied: reason". The sandboxed process is real and its syscalls
// are real; nothing is simulated.
func probe(args []string) {
	for _, a := range args {
		op, arg, _ := strings.Cut(a, ":")
		err := probeOne(op, arg)
		if err != nil {
			fmt.Printf("%s denied: %v\n", a, err)
		} else {
			fmt.Printf("%s ok\n", a)
		}
	}
}

func probeOne(op, arg string) error {
	switch op {
	case "read":
		f, err := os.Open(arg)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Read(make([]byte, 1))
		if err == io.EOF {
			err = nil // an empty file was still readable
		}
		return err
	case "list": // an empty directory (firejail's blacklist) shows nothing either
		es, err := os.ReadDir(arg)
		if err == nil && len(es) == 0 {
			err = errors.New("empty")
		}
		return err
	case "exists": // lstat: the name is visible at all
		_, err := os.Lstat(arg)
		return err
	case "entries": // the directory is unreadable or holds only firejail's own
		es, err := os.ReadDir(arg)
		if err != nil {
			return nil
		}
		var names []string
		for _, e := range es {
			if e.Name() != "firejail" {
				names = append(names, e.Name())
			}
		}
		if len(names) > 0 {
			return fmt.Errorf("sees %v", names)
		}
		return nil
	case "nosockets": // no unix socket file anywhere under arg but the workspace
		var found []string
		filepath.WalkDir(arg, func(p string, d os.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil
			case d.IsDir() && (p == "/proc" || p == "/sys" || p == "/dev"):
				return filepath.SkipDir
			case d.Type()&os.ModeSocket != 0:
				found = append(found, p)
			}
			return nil
		})
		if len(found) > 0 {
			return fmt.Errorf("sockets visible: %v", found)
		}
		return nil
	case "write":
		return os.WriteFile(arg, []byte("x"), 0o644)
	case "dial":
		c, err := net.DialTimeout("unix", arg, 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	case "remount": // mount -o remount,rw /
		return unix.Mount("none", arg, "", unix.MS_REMOUNT, "")
	case "bindmount":
		return unix.Mount(arg, arg, "", unix.MS_BIND, "")
	case "mknod":
		return unix.Mknod(arg, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
	case "raw":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "packet":
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "chown":
		return os.Chown(arg, 65534, 65534)
	case "setuid":
		return unix.Setresuid(65534, 65534, 65534)
	case "caps": // CapEff, CapPrm, CapBnd all zero and no_new_privs set
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return err
		}
		var bad []string
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			v = strings.TrimSpace(v)
			switch k {
			case "CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh":
				if strings.Trim(v, "0") != "" {
					bad = append(bad, k+"="+v)
				}
			case "NoNewPrivs":
				if v != "1" {
					bad = append(bad, k+"="+v)
				}
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("privileged: %s", strings.Join(bad, " "))
		}
		return nil
	}
	return fmt.Errorf("unknown probe %q", op)
}

// world is a host laid out for an attack: a skill directory holding the
// probe, a workspace, and secrets and sockets outside both.
type world struct {
	skill, ws, bin string
	data, home     string // a fake evoclaw data dir and a fake home
	sockets        []string
}

// newWorld builds a world and starts unix socket listeners outside the
// workspace (in a temp dir, and in /run when it is writable).
func newWorld(t *testing.T) world {
	t.Helper()
	w := world{skill: t.TempDir(), ws: t.TempDir(), data: t.TempDir(), home: t.TempDir()}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w.bin = filepath.Join(w.skill, "probe")
	copyFile(t, self, w.bin, 0o755)
	for _, f := range []string{filepath.Join(w.data, "http-token"), filepath.Join(w.data, "mqtt-users"), filepath.Join(w.home, ".ssh-key")} {
		if err := os.WriteFile(f, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.ws, "mine.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := func(p string) {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Logf("no socket at %s: %v", p, err)
			return
		}
		t.Cleanup(func() { l.Close() })
		go func() { // ends when l is closed
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		w.sockets = append(w.sockets, p)
	}
	listen(filepath.Join(w.data, "agent.sock"))
	listen(fmt.Sprintf("/run/evoclaw-test-%d.sock", os.Getpid()))
	return w
}

func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, perm); err != nil {
		t.Fatal(err)
	}
}

// run runs the probe with ops inside a sandbox of kind and returns what
// each op did.
func (w world) run(t *testing.T, kind string, ops ...string) map[string]string {
	t.Helper()
	prog, args, err := Wrap(Policy{Kind: kind, Writable: []string{w.ws}, ReadOnly: []string{w.skill}}, w.bin, ops, w.skill)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = w.skill
	cmd.Env = []string{probeEnv + "=1", "PATH=/usr/bin:/bin", "HOME=" + w.home}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", prog, args, err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		for _, op := range ops {
			if rest, ok := strings.CutPrefix(line, op+" "); ok {
				got[op] = rest
			}
		}
	}
	for _, op := range ops {
		if _, ok := got[op]; !ok {
			t.Fatalf("probe did not answer %q; output:\n%s", op, out)
		}
	}
	return got
}

// engines are the sandboxes under test, with the program each needs.
var engines = []struct{ kind, program, pkg string }{
	{Bubblewrap, "bwrap", "bubblewrap"},
	{Firejail, "firejail", "firejail"},
}

// TestConfinedPrivileges: a sandboxed tool holds no capability and cannot
// gain one, so it can neither remount the read-only file system nor make
// device nodes, raw sockets, foreign owners or another uid.
func TestConfinedPrivileges(t *testing.T) {
	for _, e := range engines {
		t.Run(e.kind, func(t *testing.T) {
			testenv.Find(t, e.program, e.pkg)
			w := newWorld(t)
			mine := filepath.Join(w.ws, "mine.txt")
			got := w.run(t, e.kind, "caps:", "remount:/", "remount:"+w.ws, "bindmount:"+w.ws, "mknod:"+filepath.Join(w.ws, "null2"),
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
			res := w.run(t, e.kind, "write:"+filepath.Join(w.data, "planted"), "write:"+filepath.Join(w.ws, "ok.txt"))
			if _, err := os.Stat(filepath.Join(w.data, "planted")); err == nil {
				t.Errorf("wrote outside the workspace: %v", res)
			}
			if res["write:"+filepath.Join(w.ws, "ok.txt")] != "ok" {
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
			w := newWorld(t)
			hidden := []string{
				"read:/etc/shadow", "read:/etc/gshadow", "list:/root", "list:/home", "list:/var/run", "list:/var/lib",
				"read:" + filepath.Join(w.data, "http-token"), "read:" + filepath.Join(w.data, "mqtt-users"), "list:" + w.data,
				"read:" + filepath.Join(w.home, ".ssh-key"), "list:" + w.home, "list:/sys/fs/cgroup",
				"dial:/run/dbus/system_bus_socket", "dial:/var/run/docker.sock", "dial:/run/systemd/private",
			}
			for _, s := range w.sockets {
				hidden = append(hidden, "dial:"+s, "exists:"+s)
			}
			visible := []string{
				"read:/etc/passwd", "read:/etc/hosts", "list:/usr/bin", "read:/bin/sh", "list:" + w.ws,
				"read:" + filepath.Join(w.ws, "mine.txt"), "list:" + w.skill, "write:" + filepath.Join(w.ws, "new.txt"),
				"write:/tmp/scratch", "entries:/run", "nosockets:/",
			}
			got := w.run(t, e.kind, append(hidden, visible...)...)
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
			prog, args, err := Wrap(Policy{Kind: e.kind, Writable: []string{ws}}, "/bin/sh",
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

// TestProbe: a working sandbox passes, a missing one is ErrUnavailable, a
// broken one (here a fake bwrap that fails like one without user
// namespaces) is an error carrying its message.
func TestProbe(t *testing.T) {
	for _, e := range engines {
		t.Run(e.kind, func(t *testing.T) {
			testenv.Find(t, e.program, e.pkg)
			if err := Probe(context.Background(), e.kind, nil); err != nil {
				t.Fatalf("probe of a working %s: %v", e.kind, err)
			}
		})
	}
	missing := func(string) (string, error) { return "", errors.New("not in PATH") }
	if err := Probe(context.Background(), Bubblewrap, missing); !errors.Is(err, ErrUnavailable) {
		t.Errorf("missing bwrap: %v", err)
	}
	fake := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Probe(context.Background(), Bubblewrap, func(string) (string, error) { return fake, nil })
	if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "new namespace") {
		t.Errorf("broken bwrap: %v", err)
	}
}

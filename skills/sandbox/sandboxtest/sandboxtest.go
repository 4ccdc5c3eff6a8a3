//go:build linux

// Package sandboxtest attacks a sandbox from inside with a real process:
// the test binary itself, copied into a skill directory and run under
// skills/sandbox, tries what an attacker would (remount, mknod, raw
// sockets, reading secrets, dialling host sockets) and reports each try.
// A test binary using it calls ActAsProbe first thing in its TestMain.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package sandboxtest

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

	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// probeEnv makes the test binary act as the probe: a tool that tries, from
// inside a sandbox, what an attacker would, and prints one line per try.
const probeEnv = "EVOCLAW_SANDBOX_PROBE"

// ActAsProbe makes the test binary the probe when World.Run started it:
// it then runs the probes of its arguments, prints what each did and
// exits. Otherwise it returns at once.
func ActAsProbe() {
	if os.Getenv(probeEnv) == "1" {
		probe(os.Args[1:])
		os.Exit(0)
	}
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

// World is a host laid out for an attack: a skill directory holding the
// probe, a workspace, and secrets and sockets outside both.
type World struct {
	// Skill is the skill directory holding the probe (Bin); WS the workspace.
	Skill, WS, Bin string
	// Data is a fake evoclaw data directory (http-token, mqtt-users),
	// Home a fake home (.ssh-key).
	Data, Home string
	// Sockets are unix sockets listening outside the workspace.
	Sockets []string
}

// NewWorld builds a World and starts unix socket listeners outside the
// workspace (in a temp dir, and in /run when it is writable).
func NewWorld(t testing.TB) World {
	t.Helper()
	w := World{Skill: t.TempDir(), WS: t.TempDir(), Data: t.TempDir(), Home: t.TempDir()}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w.Bin = filepath.Join(w.Skill, "probe")
	copyFile(t, self, w.Bin, 0o755)
	for _, f := range []string{filepath.Join(w.Data, "http-token"), filepath.Join(w.Data, "mqtt-users"), filepath.Join(w.Home, ".ssh-key")} {
		if err := os.WriteFile(f, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.WS, "mine.txt"), []byte("mine\n"), 0o644); err != nil {
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
		w.Sockets = append(w.Sockets, p)
	}
	listen(filepath.Join(w.Data, "agent.sock"))
	listen(fmt.Sprintf("/run/evoclaw-test-%d.sock", os.Getpid()))
	return w
}

func copyFile(t testing.TB, from, to string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, perm); err != nil {
		t.Fatal(err)
	}
}

// Run runs the probe with ops inside a sandbox of kind and returns what
// each op did: "ok" or "denied: reason".
func (w World) Run(t testing.TB, kind string, ops ...string) map[string]string {
	t.Helper()
	prog, args, err := sandbox.Wrap(sandbox.Policy{Kind: kind, Writable: []string{w.WS}, ReadOnly: []string{w.Skill}}, w.Bin, ops, w.Skill)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = w.Skill
	cmd.Env = []string{probeEnv + "=1", "PATH=/usr/bin:/bin", "HOME=" + w.Home}
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

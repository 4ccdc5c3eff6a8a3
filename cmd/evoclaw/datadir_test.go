package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartDataDirErrors: serve and edge refused their data directory,
// on a full file system, a read-only one, or one this user may not write,
// exit 1 with one line that names the directory and says what to do.
// Before, a full disk said only "read journal mode: disk I/O error (4874)"
// (or "no space left on device" about a temporary key file), an
// unwritable one "create temporary directory: ... permission denied", and
// a read-only one only "read-only file system", after the node had started
// its broker and the agent had warned that bash runs unconfined.
func TestStartDataDirErrors(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		skipOrFail(t, "needs root and unshare(1): a full file system is a tmpfs mounted in a mount namespace, an unwritable directory needs a user other than root")
	}
	bin := evoclawBinary(t)
	dir := t.TempDir()
	// The unprivileged user needs its own copy of the binary, in
	// directories it may enter, and the configurations.
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "evoclaw")
	copyFile(t, bin, own)
	node := filepath.Join(dir, "evoclaw.toml")
	writeFile(t, node, "[http]\nlisten = \"127.0.0.1:0\"\n[broker]\nlisten = \"127.0.0.1:0\"\n")
	agent := filepath.Join(dir, "agent.toml")
	writeFile(t, agent, "agent_id = \"a1\"\n[mqtt]\nbroker = \"tcp://127.0.0.1:1\"\n")
	for _, f := range []string{node, agent} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readOnly := filepath.Join(dir, "ro")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "full")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	// full runs the command with mnt a tmpfs of 256 KiB, filled.
	full := func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c",
			`mount -t tmpfs -o size=256k tmpfs "$1" && { head -c 1048576 /dev/zero > "$1/fill" 2>/dev/null; shift; exec "$@"; }`,
			"sh", mnt, own}, args...)...)
	}
	// readOnly runs the command with mnt a tmpfs holding data/tmp (a data
	// directory used before), remounted read-only.
	readOnlyMount := func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, unshare, append([]string{"--mount", "--propagation", "private", "sh", "-c",
			`mount -t tmpfs -o size=256k tmpfs "$1" && mkdir -p "$1/data/tmp" && mount -o remount,ro "$1" && { shift; exec "$@"; }`,
			"sh", mnt, own}, args...)...)
	}
	// nobody runs the command as an unprivileged user.
	nobody := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, own, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		return cmd
	}
	tests := []struct {
		name  string
		run   func(context.Context, ...string) *exec.Cmd
		args  []string
		datad string
		want  []string
		never []string // in the whole output
	}{
		{"serve full", full, []string{"serve", "--config", node}, filepath.Join(mnt, "data"), []string{"KiB free", "free some space"}, nil},
		{"edge full", full, []string{"edge", "--config", agent}, filepath.Join(mnt, "data"), []string{"KiB free", "free some space"}, nil},
		{"serve unwritable", nobody, []string{"serve", "--config", node}, filepath.Join(readOnly, "data"), []string{"permission denied", "may not write it"}, nil},
		{"edge unwritable", nobody, []string{"edge", "--config", agent}, readOnly, []string{"permission denied", "may not write it"}, nil},
		// Refused before anything starts: no broker, no sandbox probe
		// (which warned that bash runs unconfined).
		{"serve read-only", readOnlyMount, []string{"serve", "--config", node}, filepath.Join(mnt, "data"), []string{"read-only file system", "mounted read-only", "remount it read-write"},
			[]string{"listening", "actor system started"}},
		{"edge read-only", readOnlyMount, []string{"edge", "--config", agent}, filepath.Join(mnt, "data"), []string{"read-only file system", "mounted read-only", "remount it read-write"},
			[]string{"UNCONFINED", "sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := tt.run(ctx, append(tt.args, "--data-dir", tt.datad)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			cmd.Stdout = io.Discard
			cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + dir}
			cmd.WaitDelay = 5 * time.Second
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("%v, want exit status 1\n%s", err, stderr.String())
			}
			out := strings.TrimSpace(stderr.String())
			last := out[strings.LastIndex(out, "\n")+1:]
			if !strings.HasPrefix(last, "evoclaw: ") || strings.Contains(out, "goroutine ") {
				t.Fatalf("the last line is not the error, or a stack trace was printed:\n%s", out)
			}
			for _, w := range append(tt.want, "data directory "+tt.datad, "--data-dir") {
				if !strings.Contains(last, w) {
					t.Errorf("error lacks %q:\n%s", w, last)
				}
			}
			for _, w := range tt.never {
				if strings.Contains(out, w) {
					t.Errorf("output mentions %q:\n%s", w, out)
				}
			}
		})
	}
}

// copyFile copies the executable from to to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestServeOnFullDiskSaysNotReady: a node killed on a full card (a power
// cut) leaves its database's log and shared-memory files, and then starts
// on the full disk: the ready line is followed by one saying it is not
// ready and why. Stdout said "ready" and nothing more while every chat
// was refused.
func TestServeOnFullDiskSaysNotReady(t *testing.T) {
	dir := t.TempDir()
	// Fixed ports, as a deployed node has: its http-addr file is then
	// the same at the second start, which writes no file.
	node := filepath.Join(dir, "evoclaw.toml")
	writeFile(t, node, fmt.Sprintf("[http]\nlisten = \"127.0.0.1:%d\"\n[broker]\nlisten = \"127.0.0.1:%d\"\n", freePort(t), freePort(t)))
	mnt := filepath.Join(dir, "card")
	lines := secondStartOnFullCard(t, mnt, "orchestrator ready", "serve", "--config", node, "--data-dir", filepath.Join(mnt, "data"))
	// Which reason comes first depends on whether the node's first write
	// has failed yet: the free space, or that write's error.
	if !strings.Contains(lines[1], "NOT READY") || !strings.Contains(lines[1], "disk nearly full") && !strings.Contains(lines[1], "disk is full") {
		t.Fatalf("the line after the ready line does not say the node is not ready for its full disk:\n%s", strings.Join(lines, "\n"))
	}
}

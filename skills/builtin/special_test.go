//go:build linux

package builtin_test

import (
	"context"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
)

// margin is how far past its deadline a built-in may answer.
const margin = 2 * time.Second

// within runs fn and fails the test when it does not return within d;
// it returns fn's output. The poll has a deadline instead of a sleep.
func within[T any](t *testing.T, d time.Duration, what string, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }() // fn must return eventually; the test fails first if it does not
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-done:
		return v
	case <-timer.C:
		t.Fatalf("%s did not return within %v", what, d)
	}
	var zero T
	return zero
}

// specialWorkspace holds a text file, a FIFO nobody writes, a unix socket
// with a listener, a symlink to /dev/zero and (as root) a character device.
func specialWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("needle here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Symlink("/dev/zero", filepath.Join(ws, "zero")); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := syscall.Mknod(filepath.Join(ws, "zerodev"), syscall.S_IFCHR|0o644, 1<<8|5); err != nil {
			t.Logf("no device node: %v", err)
		}
	}
	return ws
}

// TestSpecialFilesRefused: read and edit of a FIFO, a socket, a device or a
// link to one answer at once with an error, never block.
func TestSpecialFilesRefused(t *testing.T) {
	ws := specialWorkspace(t)
	ts := fileTools(t, builtin.Options{Dir: ws, FileTimeout: 3 * time.Second})
	names := []string{"pipe", "sock", "zero"}
	if _, err := os.Lstat(filepath.Join(ws, "zerodev")); err == nil {
		names = append(names, "zerodev")
	}
	for _, name := range names {
		for _, tool := range []string{"read", "edit"} {
			args := map[string]any{"path": name, "old_text": "a", "new_text": "b"}
			if tool == "read" {
				args = map[string]any{"path": name}
			}
			out := within(t, 3*time.Second+margin, tool+" "+name, func() skills.Output { return ts.Call(context.Background(), tool, args) })
			if out.ErrorType() == "" || out.ErrorType() == wire.ErrTimeout {
				t.Errorf("%s %s = %q %v, want refused at once", tool, name, out.Text(), out.ErrorType())
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "zerodev")); err == nil {
		out := ts.Call(context.Background(), "write", map[string]any{"path": "zerodev", "content": "x"})
		if fi, err := os.Lstat(filepath.Join(ws, "zerodev")); err != nil || fi.Mode()&fs.ModeDevice == 0 {
			t.Logf("write replaced the device node with a file (harmless): %v", out.Text())
		}
	}
}

// TestFIFOReadsDoNotWedge: five reads of a FIFO at once all answer at
// once, and a call of another tool answers meanwhile.
func TestFIFOReadsDoNotWedge(t *testing.T) {
	ws := specialWorkspace(t)
	ts := fileTools(t, builtin.Options{Dir: ws, FileTimeout: 3 * time.Second})
	var wg sync.WaitGroup
	outs := make([]skills.Output, 5)
	for i := range outs {
		wg.Go(func() { outs[i] = ts.Call(context.Background(), "read", map[string]any{"path": "pipe"}) })
	}
	other := within(t, margin, "find during FIFO reads", func() skills.Output {
		return ts.Call(context.Background(), "find", map[string]any{"pattern": "*.txt"})
	})
	if !strings.Contains(other.Text(), "notes.txt") {
		t.Errorf("find = %q", other.Text())
	}
	within(t, 3*time.Second+margin, "five FIFO reads", func() bool { wg.Wait(); return true })
	for _, o := range outs {
		if o.ErrorType() == "" {
			t.Errorf("FIFO read succeeded: %q", o.Text())
		}
	}
}

// TestWalksSkipSpecialFiles: grep and find never open a FIFO, a socket
// or a device, and say what they skipped.
func TestWalksSkipSpecialFiles(t *testing.T) {
	ws := specialWorkspace(t)
	ts := fileTools(t, builtin.Options{Dir: ws, FileTimeout: 3 * time.Second})
	out := within(t, 3*time.Second+margin, "grep", func() skills.Output {
		return ts.Call(context.Background(), "grep", map[string]any{"pattern": "needle"})
	})
	if out.ErrorType() != "" || !strings.Contains(out.Text(), "notes.txt:1: needle here") || !strings.Contains(out.Text(), "skipped") {
		t.Errorf("grep = %q %v", out.Text(), out.ErrorType())
	}
	out = within(t, 3*time.Second+margin, "find", func() skills.Output {
		return ts.Call(context.Background(), "find", map[string]any{"pattern": "*"})
	})
	lines := strings.Split(out.Text(), "\n")
	if slices.Contains(lines, "pipe") || slices.Contains(lines, "sock") || !strings.Contains(out.Text(), "skipped") {
		t.Errorf("find = %q", out.Text())
	}
}

// stuckFiles is FileOps whose every call blocks until release is closed,
// like a file system that stopped answering (hung NFS, FUSE).
type stuckFiles struct {
	builtin.Local
	release chan struct{}
	calls   chan struct{} // one send per call that entered
}

func (s stuckFiles) block() { s.calls <- struct{}{}; <-s.release }

func (s stuckFiles) Open(ctx context.Context, name string) (io.ReadCloser, fs.FileInfo, error) {
	s.block()
	return s.Local.Open(ctx, name)
}

func (s stuckFiles) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	s.block()
	return s.Local.Stat(ctx, name)
}

// TestStuckFileSystemDeadline: a file tool answers timeout at its deadline
// even when the file system never returns, and the stuck calls are
// bounded: past the bound, calls answer busy at their deadline instead of
// piling up goroutines.
func TestStuckFileSystemDeadline(t *testing.T) {
	ws := t.TempDir()
	files := stuckFiles{Local: builtin.Local{Dir: ws}, release: make(chan struct{}), calls: make(chan struct{}, 100)}
	t.Cleanup(func() { close(files.release) })
	const deadline = 300 * time.Millisecond
	ts := fileTools(t, builtin.Options{Dir: ws, Files: files, FileTimeout: deadline, MaxFileCalls: 2})
	for i := range 3 {
		start := time.Now()
		out := within(t, deadline+margin, "stuck read", func() skills.Output {
			return ts.Call(context.Background(), "read", map[string]any{"path": "x"})
		})
		want := wire.ErrTimeout
		if i == 2 {
			want = wire.ErrBusy
		}
		if out.ErrorType() != want {
			t.Errorf("stuck read %d = %v %q, want %v", i, out.ErrorType(), out.Text(), want)
		}
		if el := time.Since(start); el < deadline-50*time.Millisecond {
			t.Errorf("stuck read %d returned after %v, before its deadline", i, el)
		}
	}
	if n := len(files.calls); n != 2 {
		t.Errorf("%d calls entered the stuck file system, want 2 (the bound)", n)
	}
}

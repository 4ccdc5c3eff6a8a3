package builtin

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestResolve(t *testing.T) {
	const ws = "/srv/ws"
	tests := []struct {
		in, want string
		outside  bool
	}{
		{"a.txt", "a.txt", false},
		{"./a/../b", "b", false},
		{".", ".", false},
		{"/srv/ws", ".", false},
		{"/srv/ws/x/y", "x/y", false},
		{"/srv/ws/../ws/x", "x", false},
		{"/srv/wsx/y", "", true},
		{"/etc/passwd", "", true},
		{"..", "", true},
		{"../ws/a", "", true},
		{"a/../../b", "", true},
		{"/srv/ws/../other", "", true},
	}
	for _, tc := range tests {
		got, err := resolve(ws, tc.in)
		if tc.outside {
			if !errors.Is(err, ErrOutsideWorkspace) {
				t.Errorf("resolve(%q) = %q, %v; want ErrOutsideWorkspace", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("resolve(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "a\x00b", string(make([]byte, maxPathLen+1))} {
		if _, err := resolve(ws, bad); err == nil || errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("resolve(%q) = %v, want a plain error", bad[:min(len(bad), 8)], err)
		}
	}
}

// TestLocalJailRace swaps a symlink between a directory inside the
// workspace and one outside while another goroutine reads through it. A
// check-then-open jail would sometimes read the outside file; os.Root
// resolves and opens in one step, so every read is either the inside file
// or refused.
func TestLocalJailRace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "real", "f"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(outside, "f"), []byte("secret"), 0o644)
	if err := os.Symlink("real", filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		targets := []string{outside, "real"}
		for i := 0; !stop.Load(); i++ {
			tmp := filepath.Join(ws, "d.tmp")
			if err := os.Symlink(targets[i%2], tmp); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, filepath.Join(ws, "d")); err != nil {
				t.Error(err)
				return
			}
		}
	})
	l := Local{Dir: ws}
	var inside, refused int
	for range 3000 {
		rc, _, err := l.Open(context.Background(), "d/f")
		if err != nil {
			if !errors.Is(err, ErrOutsideWorkspace) {
				t.Fatalf("open failed with %v, want ErrOutsideWorkspace", err)
			}
			refused++
			continue
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != "inside" {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("read %q through the swapped symlink", b)
		}
		inside++
	}
	stop.Store(true)
	wg.Wait()
	if inside == 0 || refused == 0 {
		t.Logf("the swap never interleaved both ways (inside %d, refused %d); the outcome is still correct", inside, refused)
	}
}

func TestOptionsNeedAbsoluteDir(t *testing.T) {
	for _, dir := range []string{"", "relative/dir"} {
		if _, err := NewRead(Options{Dir: dir}); err == nil {
			t.Errorf("NewRead(Dir %q) accepted", dir)
		}
	}
	if _, err := Group("nope", Options{Dir: "/x"}); err == nil {
		t.Error("unknown group accepted")
	}
	if _, err := Group(GroupRemote, Options{Dir: "/x"}); err == nil {
		t.Error("remote group without a backend accepted")
	}
	for _, g := range []string{GroupCoding, GroupReadOnly, GroupAll} {
		tools, err := Group(g, Options{Dir: "/x"})
		if err != nil || len(tools) != len(groupTools[g]) {
			t.Errorf("Group(%s) = %d tools, %v", g, len(tools), err)
		}
	}
}

// TestSymlinkedWorkspace: a workspace configured through a symlink takes
// absolute paths in either form, and still nothing outside.
func TestSymlinkedWorkspace(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(real, "a.txt"), []byte("A"), 0o644)
	tool, err := NewRead(Options{Dir: link})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.txt", filepath.Join(link, "a.txt"), filepath.Join(real, "a.txt")} {
		if out := tool.Run(context.Background(), map[string]any{"path": p}); out.Text() != "A" {
			t.Errorf("read %s = %+v", p, out)
		}
	}
	if out := tool.Run(context.Background(), map[string]any{"path": filepath.Join(filepath.Dir(real), "x")}); out.ErrorType() != "permission_denied" {
		t.Errorf("read beside the real workspace = %+v", out)
	}
}

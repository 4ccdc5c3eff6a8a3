//go:build linux

package attack

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
)

// wedgeBound is how long a built-in may take on a hostile file.
const wedgeBound = 5 * time.Second

// builtinWedges: a workspace holding a FIFO no one writes, a device node,
// a socket and symlinks to /dev/zero and /dev/tty; the file tools must
// answer each call with an error, in time, and never hang a worker.
func builtinWedges(t *testing.T, b *board) {
	c := b.class("FIFO/device wedge of built-ins", true)
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(ws, "zero"), syscall.S_IFCHR|0o644, 1<<8|5); err != nil {
		t.Logf("no device node (not root?): %v", err)
	}
	for name, target := range map[string]string{"devzero": "/dev/zero", "tty": "/dev/tty", "stdin": "/proc/self/fd/0"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "plain.txt"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tools, err := builtin.Group(builtin.GroupAll, builtin.Options{Dir: ws, FileTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]skills.GoTool{}
	for _, tl := range tools {
		byName[tl.Tool.Name] = tl
	}
	call := func(tool string, args map[string]any) (skills.Output, bool) {
		done := make(chan skills.Output, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		go func() { done <- byName[tool].Run(ctx, args) }() // ends at the latest with ctx
		select {
		case out := <-done:
			return out, true
		case <-time.After(wedgeBound):
			return skills.Output{}, false
		}
	}
	for _, name := range []string{"fifo", "zero", "devzero", "tty", "stdin"} {
		if _, err := os.Lstat(filepath.Join(ws, name)); err != nil {
			continue
		}
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"read", map[string]any{"path": name}},
			{"edit", map[string]any{"path": name, "old_text": "a", "new_text": "b"}},
		} {
			out, inTime := call(tc.tool, tc.args)
			c.try(inTime && !out.Succeeded(), tc.tool+" "+name)
		}
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"grep", map[string]any{"pattern": "needle"}},
		{"find", map[string]any{"pattern": "*"}},
	} {
		out, inTime := call(tc.tool, tc.args)
		c.try(inTime && out.Succeeded(), tc.tool+" over a workspace of special files")
	}
}

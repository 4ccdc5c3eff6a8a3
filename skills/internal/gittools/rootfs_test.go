package gittools

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5"
)

func newTestRootFS(t *testing.T) (*rootFS, string, string) {
	t.Helper()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return newRootFS(root, dir), dir, outside
}

func TestRootFSPaths(t *testing.T) {
	r, dir, _ := newTestRootFS(t)
	dot, err := r.Chroot(".git")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fs         billy.Filesystem
		name, want string
	}{
		{r, "", "."},
		{r, ".", "."},
		{r, "a/b", "a/b"},
		{r, "./a//b/", "a/b"},
		{r, "a/../b", "b"},
		{r, "/a", "a"},
		{r, dir, "."},
		{r, dir + "/a", "a"},
		{dot, "", ".git"},
		{dot, "refs/heads", ".git/refs/heads"},
		{dot, "/objects", ".git/objects"},
		{dot, filepath.Join(dir, ".git", "HEAD"), ".git/HEAD"},
		{r, "..", ""},
		{r, "a/../../b", ""},
		{dot, "../a.txt", ""},
	} {
		got, err := tc.fs.(*rootFS).rel(tc.name)
		if tc.want == "" {
			if !errors.Is(err, billy.ErrCrossedBoundary) {
				t.Errorf("%s: rel(%q) = %q, %v; want ErrCrossedBoundary", tc.fs.Root(), tc.name, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: rel(%q) = %q, %v; want %q", tc.fs.Root(), tc.name, got, err, tc.want)
		}
	}
	if got, want := dot.Root(), filepath.Join(dir, ".git"); got != want {
		t.Errorf("Root() = %q, want %q", got, want)
	}
}

func TestRootFSOps(t *testing.T) {
	r, dir, outside := newTestRootFS(t)
	// Create makes parent directories, as go-billy's osfs does.
	f, err := r.Create("x/y/z.txt")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "zed")
	if f.Name() != "x/y/z.txt" {
		t.Errorf("Name() = %q", f.Name())
	}
	if err := f.Lock(); err != nil {
		t.Errorf("Lock: %v", err)
	}
	if err := f.Unlock(); err != nil {
		t.Errorf("Unlock: %v", err)
	}
	f.Close()

	tmp, err := r.TempFile("objects/pack", "tmp_obj_")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if !strings.HasPrefix(tmp.Name(), "objects/pack/tmp_obj_") {
		t.Errorf("TempFile name %q", tmp.Name())
	}
	if err := r.Rename(tmp.Name(), "objects/ab/cdef"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "objects/ab/cdef")); err != nil {
		t.Errorf("renamed temp file: %v", err)
	}

	// Links inside are content; following one out fails.
	if err := r.Symlink(outside, "out"); err != nil {
		t.Fatal(err)
	}
	if err := r.Symlink("x/y", "in"); err != nil {
		t.Fatal(err)
	}
	if fi, err := r.Lstat("out"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("Lstat(out) = %v, %v", fi, err)
	}
	if target, err := r.Readlink("out"); err != nil || target != outside {
		t.Errorf("Readlink(out) = %q, %v", target, err)
	}
	if f, err := r.Open("in/z.txt"); err != nil {
		t.Errorf("Open through a link inside: %v", err)
	} else {
		f.Close()
	}
	for name, op := range map[string]func() error{
		"Open":     func() error { _, err := r.Open("out/secret"); return err },
		"Stat":     func() error { _, err := r.Stat("out/secret"); return err },
		"ReadDir":  func() error { _, err := r.ReadDir("out"); return err },
		"Create":   func() error { _, err := r.Create("out/new"); return err },
		"MkdirAll": func() error { return r.MkdirAll("out/d", 0o755) },
		"TempFile": func() error { _, err := r.TempFile("out", "t"); return err },
		"Rename":   func() error { return r.Rename("x/y/z.txt", "out/z.txt") },
		"Remove":   func() error { return r.Remove("out/secret") },
		"Chmod":    func() error { return r.Chmod("out/secret", 0o600) },
		"Symlink":  func() error { return r.Symlink("x", "out/l") },
	} {
		if err := op(); err == nil {
			t.Errorf("%s through a link leading out succeeded", name)
		}
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "SECRET" {
		t.Errorf("outside file = %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside holds %d entries", len(entries))
	}

	infos, err := r.ReadDir("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name())
	}
	if got := strings.Join(names, ","); got != "in,objects,out,x" {
		t.Errorf("ReadDir = %s", got)
	}
	for _, name := range []string{"", ".", dir} {
		if err := r.RemoveAll(name); err == nil {
			t.Errorf("RemoveAll(%q) of the top succeeded", name)
		}
	}
	if err := r.RemoveAll("x"); err != nil {
		t.Errorf("RemoveAll(x): %v", err)
	}
}

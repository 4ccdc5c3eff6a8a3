package gittools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
)

// rootFS is a billy.Filesystem over an os.Root: every path go-git opens,
// creates, renames, stats or lists is resolved by the kernel component by
// component from the root's directory descriptor (openat), symlinks are
// followed only while they stay inside the root, and nothing is checked
// by path first and used later, so swapping a directory for a symlink
// mid-call cannot lead a read or a write out of the workspace. go-billy v5
// has no such file system (its BoundOS resolves a path with securejoin,
// then opens it by name: a check-then-use race); v6's does, but go-git v5
// cannot use it.
//
// A rootFS is a view of its root under base, a clean slash-separated path
// inside it ("" for the root itself): Chroot narrows the view, sharing the
// root. Paths given to it are relative to the view; an absolute one is
// taken relative to the view too (after stripping the view's own absolute
// directory, as go-billy's osfs does), and one that climbs out of the view
// with ".." is refused with billy.ErrCrossedBoundary.
//
// Symlinks inside the root are content: Lstat, Readlink and Symlink act on
// the link itself, and Symlink writes any target, which only matters when
// something follows it, and os.Root never follows one out.
type rootFS struct {
	root *os.Root
	dir  string // the root's absolute directory, for Root()
	base string
}

var (
	_ billy.Filesystem = (*rootFS)(nil)
	_ billy.Change     = (*rootFS)(nil)
)

// Modes of created directories and files, as go-billy's osfs.
const (
	dirMode    = 0o755
	createMode = 0o666
	tempMode   = 0o600
)

func newRootFS(root *os.Root, dir string) *rootFS {
	return &rootFS{root: root, dir: filepath.Clean(dir)}
}

// rel maps a name of the view to a path inside the root.
func (r *rootFS) rel(name string) (string, error) {
	name = filepath.ToSlash(name)
	if path.IsAbs(name) {
		self := strings.TrimSuffix(filepath.ToSlash(r.Root()), "/")
		if name == self || strings.HasPrefix(name, self+"/") {
			name = name[len(self):]
		}
		name = strings.TrimLeft(name, "/")
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", &os.PathError{Op: "open", Path: name, Err: billy.ErrCrossedBoundary}
	}
	if p := path.Join(r.base, c); p != "" {
		return p, nil
	}
	return ".", nil
}

// mkParent creates the parent directories of p (a path inside the root),
// as go-billy's osfs does before creating a file, link or rename target.
func (r *rootFS) mkParent(p string) error {
	if d := path.Dir(p); d != "." {
		return r.root.MkdirAll(d, dirMode)
	}
	return nil
}

// isTop reports whether p is the view's own directory, which Remove,
// RemoveAll and Rename refuse to touch.
func (r *rootFS) isTop(p string) bool {
	return p == "." || p == r.base
}

// at runs op on name's path inside the root.
func at[T any](r *rootFS, name string, op func(p string) (T, error)) (T, error) {
	p, err := r.rel(name)
	if err != nil {
		var zero T
		return zero, err
	}
	return op(p)
}

// do is at for operations that return only an error.
func (r *rootFS) do(name string, op func(p string) error) error {
	_, err := at(r, name, func(p string) (struct{}, error) { return struct{}{}, op(p) })
	return err
}

func (r *rootFS) Create(name string) (billy.File, error) {
	return r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, createMode)
}

func (r *rootFS) Open(name string) (billy.File, error) {
	return r.OpenFile(name, os.O_RDONLY, 0)
}

func (r *rootFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	return at(r, name, func(p string) (billy.File, error) {
		if flag&os.O_CREATE != 0 {
			if err := r.mkParent(p); err != nil {
				return nil, err
			}
		}
		f, err := r.root.OpenFile(p, flag, perm)
		if err != nil {
			return nil, err
		}
		return &rootFile{File: f, name: name}, nil
	})
}

func (r *rootFS) Stat(name string) (os.FileInfo, error) { return at(r, name, r.root.Stat) }

func (r *rootFS) Lstat(name string) (os.FileInfo, error) { return at(r, name, r.root.Lstat) }

func (r *rootFS) Readlink(name string) (string, error) { return at(r, name, r.root.Readlink) }

func (r *rootFS) Symlink(target, link string) error {
	return r.do(link, func(p string) error {
		if err := r.mkParent(p); err != nil {
			return err
		}
		return r.root.Symlink(target, p)
	})
}

func (r *rootFS) Rename(from, to string) error {
	f, err := r.rel(from)
	if err != nil {
		return err
	}
	t, err := r.rel(to)
	if err != nil {
		return err
	}
	if r.isTop(f) || r.isTop(t) {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.New("cannot rename the file system's top directory")}
	}
	if err := r.mkParent(t); err != nil {
		return err
	}
	return r.root.Rename(f, t)
}

func (r *rootFS) Remove(name string) error { return r.remove("remove", name, r.root.Remove) }

func (r *rootFS) RemoveAll(name string) error { return r.remove("removeall", name, r.root.RemoveAll) }

// remove runs rm on name unless it is the view's top.
func (r *rootFS) remove(op, name string, rm func(string) error) error {
	return r.do(name, func(p string) error {
		if r.isTop(p) {
			return &os.PathError{Op: op, Path: name, Err: errors.New("cannot remove the file system's top directory")}
		}
		return rm(p)
	})
}

func (r *rootFS) MkdirAll(name string, perm os.FileMode) error {
	return r.do(name, func(p string) error { return r.root.MkdirAll(p, perm) })
}

// ReadDir lists a directory sorted by name. The directory is opened in
// the root and its entries are lstat'ed relative to its descriptor
// (fstatat), so neither can be raced out of the root.
func (r *rootFS) ReadDir(name string) ([]os.FileInfo, error) {
	return at(r, name, func(p string) ([]os.FileInfo, error) {
		d, err := r.root.Open(p)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		infos, err := d.Readdir(-1)
		slices.SortFunc(infos, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
		return infos, err
	})
}

// TempFile creates a new file named prefix and a random suffix in dir
// (the view's top when dir is ""; never the system's temporary
// directory), creating dir if needed. Its Name is its path in the view,
// ready for Rename.
func (r *rootFS) TempFile(dir, prefix string) (billy.File, error) {
	if strings.ContainsAny(prefix, `/\`) {
		return nil, &os.PathError{Op: "createtemp", Path: prefix, Err: errors.New("prefix holds a path separator")}
	}
	d, err := r.rel(dir)
	if err != nil {
		return nil, err
	}
	if err := r.root.MkdirAll(d, dirMode); err != nil {
		return nil, err
	}
	for range 100 {
		var b [8]byte
		rand.Read(b[:])
		name := prefix + hex.EncodeToString(b[:])
		f, err := r.root.OpenFile(path.Join(d, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, tempMode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &rootFile{File: f, name: r.Join(dir, name)}, nil
	}
	return nil, &os.PathError{Op: "createtemp", Path: r.Join(dir, prefix+"*"), Err: fs.ErrExist}
}

func (r *rootFS) Join(elem ...string) string {
	return filepath.Join(elem...)
}

// Chroot returns the view of dir inside this one, sharing the root: a
// symlink along dir is followed (inside the root) at each use, never
// pinned.
func (r *rootFS) Chroot(dir string) (billy.Filesystem, error) {
	p, err := r.rel(dir)
	if err != nil {
		return nil, err
	}
	if p == "." {
		p = ""
	}
	return &rootFS{root: r.root, dir: r.dir, base: p}, nil
}

// Root is the view's absolute directory, as go-billy's osfs reports it.
func (r *rootFS) Root() string {
	return filepath.Join(r.dir, filepath.FromSlash(r.base))
}

func (r *rootFS) Chmod(name string, mode os.FileMode) error {
	return r.do(name, func(p string) error { return r.root.Chmod(p, mode) })
}

func (r *rootFS) Lchown(name string, uid, gid int) error {
	return r.do(name, func(p string) error { return r.root.Lchown(p, uid, gid) })
}

func (r *rootFS) Chown(name string, uid, gid int) error {
	return r.do(name, func(p string) error { return r.root.Chown(p, uid, gid) })
}

func (r *rootFS) Chtimes(name string, atime, mtime time.Time) error {
	return r.do(name, func(p string) error { return r.root.Chtimes(p, atime, mtime) })
}

// rootFile is a billy.File: an *os.File opened through the root, named
// as it was asked for, with flock locks where the system has them.
type rootFile struct {
	*os.File
	name string
}

func (f *rootFile) Name() string { return f.name }

func (f *rootFile) Lock() error   { return lockFile(f.File) }
func (f *rootFile) Unlock() error { return unlockFile(f.File) }

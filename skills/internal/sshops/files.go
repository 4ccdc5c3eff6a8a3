package sshops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/pkg/sftp"

	"github.com/evoclaw/evoclaw/skills/builtin"
)

// Files is builtin.FileOps over SFTP, jailed to the remote workspace.
type Files struct{ c *Client }

var _ builtin.FileOps = (*Files)(nil)

// within reports whether p is the workspace or under it.
func (c *Client) within(p string) bool {
	return p == c.real || strings.HasPrefix(p, strings.TrimSuffix(c.real, "/")+"/")
}

// maxNameBytes is the longest name of one path component that Linux file
// systems take (NAME_MAX).
const maxNameBytes = 255

// resolve maps a workspace-relative name to a remote path, walking its
// components: symlinks are resolved by the server and must stay inside
// the workspace; the first missing component ends the walk (the rest will
// be created under a checked directory). A component longer than a file
// system takes is refused here as the local file system refuses it: the
// SFTP server would answer "Bad message", which tells the model nothing.
func (c *Client) resolve(name string) (string, error) {
	cur := c.real
	if name == "." || name == "" {
		return cur, nil
	}
	parts := strings.Split(name, "/")
	for _, part := range parts {
		if len(part) > maxNameBytes {
			return "", fmt.Errorf("a name in the path is %d bytes, over %d: %w", len(part), maxNameBytes, syscall.ENAMETOOLONG)
		}
	}
	for i, part := range parts {
		next := path.Join(cur, part)
		fi, err := c.sftp.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return path.Join(append([]string{next}, parts[i+1:]...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := c.sftp.RealPath(next)
			if err != nil {
				return "", fmt.Errorf("resolve symlink %s: %w", name, err)
			}
			if !c.within(target) {
				return "", fmt.Errorf("%w: %s", builtin.ErrOutsideWorkspace, name)
			}
			next = target
		}
		cur = next
	}
	return cur, nil
}

// Open opens a regular file for reading. Anything else is refused with
// builtin.ErrNotRegular before it is opened: the SFTP server's open of a
// FIFO would wait for a writer. (A swap between the stat and the open is
// not caught here; the tool's deadline still bounds the call.)
func (f *Files) Open(_ context.Context, name string) (io.ReadCloser, fs.FileInfo, error) {
	p, err := f.c.resolve(name)
	if err != nil {
		return nil, nil, err
	}
	if fi, err := f.c.sftp.Stat(p); err != nil {
		return nil, nil, mapErr(err)
	} else if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: %w", name, builtin.ErrNotRegular)
	}
	fh, err := f.c.sftp.Open(p)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, mapErr(err)
	}
	if !fi.Mode().IsRegular() {
		fh.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, builtin.ErrNotRegular)
	}
	return fh, fi, nil
}

// WriteFile writes a temporary file beside name and renames it over name
// (POSIX rename extension when the server has it, as OpenSSH does).
func (f *Files) WriteFile(_ context.Context, name string, data []byte, perm fs.FileMode) error {
	p, err := f.c.resolve(name)
	if err != nil {
		return err
	}
	if err := f.c.sftp.MkdirAll(path.Dir(p)); err != nil {
		return mapErr(err)
	}
	tmp := builtin.TempName(p, "tmp")
	fh, err := f.c.sftp.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return mapErr(err)
	}
	_, werr := fh.Write(data)
	if werr == nil {
		werr = fh.Chmod(perm)
	}
	if cerr := fh.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = f.c.sftp.PosixRename(tmp, p)
	}
	if werr != nil {
		f.c.sftp.Remove(tmp) // best effort; the write already failed
		return mapErr(werr)
	}
	return nil
}

// Stat returns the info of name, following symlinks inside the workspace.
func (f *Files) Stat(_ context.Context, name string) (fs.FileInfo, error) {
	p, err := f.c.resolve(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.c.sftp.Stat(p)
	return fi, mapErr(err)
}

// ReadDir lists a directory, sorted by name.
func (f *Files) ReadDir(_ context.Context, name string) ([]fs.DirEntry, error) {
	p, err := f.c.resolve(name)
	if err != nil {
		return nil, err
	}
	infos, err := f.c.sftp.ReadDir(p)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		out[i] = fs.FileInfoToDirEntry(fi)
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// mapErr gives SFTP status errors the fs sentinels the tools test for.
func mapErr(err error) error {
	var se *sftp.StatusError
	if errors.As(err, &se) {
		switch se.FxCode() {
		case sftp.ErrSSHFxNoSuchFile:
			return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		case sftp.ErrSSHFxPermissionDenied:
			return fmt.Errorf("%w: %w", fs.ErrPermission, err)
		}
	}
	return err
}

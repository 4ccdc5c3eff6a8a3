package builtin

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// maxPathLen bounds a path argument, in bytes.
const maxPathLen = 4096

// resolve turns a path argument into a name relative to the workspace
// root at dir: a relative path is taken from the root, an absolute one
// must lie under dir. The result is clean and slash-separated ("." for
// the root). It is a lexical check; symlinks are the backend's business.
func resolve(dir, p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("empty path")
	case len(p) > maxPathLen:
		return "", fmt.Errorf("path is %d bytes long, at most %d", len(p), maxPathLen)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("path contains a NUL byte")
	}
	if path.IsAbs(p) {
		root := path.Clean(filepath.ToSlash(dir))
		c := path.Clean(p)
		if c == root {
			return ".", nil
		}
		rel, ok := strings.CutPrefix(c, strings.TrimSuffix(root, "/")+"/")
		if !ok {
			return "", fmt.Errorf("%w: %q is not under the workspace %s", ErrOutsideWorkspace, p, dir)
		}
		return rel, nil
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: %q leads out of the workspace", ErrOutsideWorkspace, p)
	}
	return c, nil
}

package gittools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	udiff "github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// binarySniff is how much of a file decides whether it is binary, as git
// does: a NUL byte in it.
const binarySniff = 8000

func (o Options) diff() skills.GoTool {
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "git_diff",
			Description: fmt.Sprintf("Show changes of the workspace repository as a unified diff: by default the unstaged changes "+
				"(working tree against the index), with staged=true the staged ones (index against HEAD), with ref the changes "+
				"a commit made. At most %d KiB.", o.MaxDiffBytes>>10),
			Parameters: params(nil,
				"staged", skills.TypeBoolean, "Show staged changes instead of unstaged ones (default false)",
				"ref", skills.TypeString, "A commit (hash, branch or tag) whose changes to show instead",
				"path", skills.TypeString, "Only files at or under this path, relative to the workspace"),
			Permissions: []string{skills.PermGit},
		},
		Run: o.runDiff,
	}
}

func (o Options) runDiff(ctx context.Context, args map[string]any) skills.Output {
	prefix, err := relPath(str(args, "path"))
	if err != nil {
		return skills.Failed(wire.ErrInvalidParams, "git_diff: "+err.Error())
	}
	repo, done, err := o.open()
	if err != nil {
		return failure("git_diff", err)
	}
	defer done()
	var p fdiff.Patch
	if ref := str(args, "ref"); ref != "" {
		p, err = commitPatch(ctx, repo, ref)
	} else {
		p, err = o.worktreePatch(repo, args["staged"] == true)
	}
	if err != nil {
		return failure("git_diff", err)
	}
	p = filterPatch(p, prefix)
	if len(p.FilePatches()) == 0 {
		return skills.Output{Content: []skills.Block{skills.TextBlock("no changes")}}
	}
	var buf bytes.Buffer
	if err := fdiff.NewUnifiedEncoder(&buf, fdiff.DefaultContextLines).Encode(p); err != nil {
		return failure("git_diff", err)
	}
	out := skills.Output{}
	s := buf.String()
	if len(s) > o.MaxDiffBytes {
		out.Truncated, out.ResultBytes = true, int64(len(s))
		s = strings.ToValidUTF8(s[:o.MaxDiffBytes], "") + fmt.Sprintf("\n[diff cut at %d KiB of %d; narrow it with path]", o.MaxDiffBytes>>10, len(s)>>10)
	}
	out.Content = []skills.Block{skills.TextBlock(s)}
	return out
}

// commitPatch is the patch of commit ref against its first parent (or
// against nothing for a root commit).
func commitPatch(ctx context.Context, repo *git.Repository, ref string) (fdiff.Patch, error) {
	h, err := repo.ResolveRevision(plumbing.Revision(ref))
	if err != nil {
		return nil, fmt.Errorf("unknown revision %q: %w", ref, err)
	}
	c, err := repo.CommitObject(*h)
	if err != nil {
		return nil, err
	}
	to, err := c.Tree()
	if err != nil {
		return nil, err
	}
	var from *object.Tree
	if c.NumParents() > 0 {
		parent, err := c.Parent(0)
		if err != nil {
			return nil, err
		}
		if from, err = parent.Tree(); err != nil {
			return nil, err
		}
	}
	if from == nil {
		from = &object.Tree{}
	}
	return from.PatchContext(ctx, to)
}

// worktreePatch compares the index with the working tree, or with staged
// HEAD with the index.
func (o Options) worktreePatch(repo *git.Repository, staged bool) (fdiff.Patch, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	st, err := wt.StatusWithOptions(git.StatusOptions{Strategy: git.Preload})
	if err != nil {
		return nil, err
	}
	idx, err := repo.Storer.Index()
	if err != nil {
		return nil, err
	}
	var head *object.Tree
	if ref, err := repo.Head(); err == nil {
		c, err := repo.CommitObject(ref.Hash())
		if err != nil {
			return nil, err
		}
		if head, err = c.Tree(); err != nil {
			return nil, err
		}
	}
	blob := func(h plumbing.Hash) ([]byte, error) {
		b, err := repo.BlobObject(h)
		if err != nil {
			return nil, err
		}
		r, err := b.Reader()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(io.LimitReader(r, int64(o.MaxDiffBytes)+1))
	}
	var p patch
	for _, name := range slices.Sorted(maps.Keys(st)) {
		fs := st[name]
		var from, to *file
		if staged {
			if fs.Staging == git.Unmodified || fs.Staging == git.Untracked {
				continue
			}
			if head != nil {
				if f, err := head.File(name); err == nil {
					from = &file{path: name, mode: f.Mode, hash: f.Hash}
					if from.data, err = blob(f.Hash); err != nil {
						return nil, err
					}
				}
			}
			if e, err := idx.Entry(name); err == nil && fs.Staging != git.Deleted {
				to = &file{path: name, mode: e.Mode, hash: e.Hash}
				if to.data, err = blob(e.Hash); err != nil {
					return nil, err
				}
			}
		} else {
			if fs.Worktree == git.Unmodified || fs.Worktree == git.Untracked {
				continue
			}
			if e, err := idx.Entry(name); err == nil {
				from = &file{path: name, mode: e.Mode, hash: e.Hash}
				if from.data, err = blob(e.Hash); err != nil {
					return nil, err
				}
			}
			if fs.Worktree != git.Deleted {
				data, link, err := readWorktree(wt, name, o.MaxDiffBytes)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, err
				}
				if err == nil {
					to = &file{path: name, mode: filemode.Regular, data: data, hash: plumbing.ComputeHash(plumbing.BlobObject, data)}
					switch {
					case link:
						to.mode = filemode.Symlink
					case from != nil && from.mode != filemode.Symlink:
						to.mode = from.mode
					}
				}
			}
		}
		if from == nil && to == nil {
			continue
		}
		p = append(p, newFilePatch(from, to))
	}
	return p, nil
}

// readWorktree reads at most max+1 bytes of a working tree file through
// the worktree's root-bound file system; of a symlink it reads the
// target, which is what git stores for it (link reports that): a link is
// content, never followed.
func readWorktree(wt *git.Worktree, name string, max int) (data []byte, link bool, err error) {
	fi, err := wt.Filesystem.Lstat(name)
	if err != nil {
		return nil, false, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := wt.Filesystem.Readlink(name)
		return []byte(target), true, err
	}
	f, err := wt.Filesystem.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, int64(max)+1))
	return data, false, err
}

// filterPatch keeps the file patches at or under prefix ("" keeps all).
func filterPatch(p fdiff.Patch, prefix string) fdiff.Patch {
	if prefix == "" {
		return p
	}
	var out patch
	for _, fp := range p.FilePatches() {
		from, to := fp.Files()
		for _, f := range []fdiff.File{from, to} {
			if f != nil && (f.Path() == prefix || strings.HasPrefix(f.Path(), prefix+"/")) {
				out = append(out, fp)
				break
			}
		}
	}
	return out
}

// patch, filePatch, file and chunk implement go-git's diff interfaces
// for changes that are not between two trees, so its unified encoder
// can print them.
type patch []fdiff.FilePatch

func (p patch) FilePatches() []fdiff.FilePatch { return p }
func (p patch) Message() string                { return "" }

type file struct {
	path string
	mode filemode.FileMode
	hash plumbing.Hash
	data []byte
}

func (f *file) Hash() plumbing.Hash     { return f.hash }
func (f *file) Mode() filemode.FileMode { return f.mode }
func (f *file) Path() string            { return f.path }

type filePatch struct {
	from, to *file
	binary   bool
	chunks   []fdiff.Chunk
}

func newFilePatch(from, to *file) *filePatch {
	fp := &filePatch{from: from, to: to}
	var a, b []byte
	if from != nil {
		a = from.data
	}
	if to != nil {
		b = to.data
	}
	if isBinary(a) || isBinary(b) {
		fp.binary = true
		return fp
	}
	for _, d := range udiff.Do(string(a), string(b)) {
		op := fdiff.Equal
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		}
		fp.chunks = append(fp.chunks, chunk{content: d.Text, op: op})
	}
	return fp
}

func (fp *filePatch) IsBinary() bool { return fp.binary }
func (fp *filePatch) Files() (from, to fdiff.File) {
	if fp.from != nil {
		from = fp.from
	}
	if fp.to != nil {
		to = fp.to
	}
	return from, to
}
func (fp *filePatch) Chunks() []fdiff.Chunk { return fp.chunks }

type chunk struct {
	content string
	op      fdiff.Operation
}

func (c chunk) Content() string       { return c.content }
func (c chunk) Type() fdiff.Operation { return c.op }

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) >= 0
}

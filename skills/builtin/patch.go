package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// maxPatchFiles bounds the files one apply_patch call may change.
const maxPatchFiles = 100

// patchHeld is how many times Options.MaxEditBytes one apply_patch call
// may hold in all: the files it reads and the contents it makes, which
// it keeps in memory until every hunk has applied. Without it a patch of
// a few kilobytes (99 copies of one 4 MiB file) held 486 MiB.
const patchHeld = 4

// NewApplyPatch returns the apply_patch tool: a unified diff (git's or
// the traditional format) over any number of files of the workspace,
// applied whole or not at all. It needs a FileOps that is a Batcher (the
// local backend).
func NewApplyPatch(o Options) (skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return skills.GoTool{}, err
	}
	if _, ok := o.Files.(Batcher); !ok {
		return skills.GoTool{}, fmt.Errorf("apply_patch: the file backend %T cannot change several files at once", o.Files)
	}
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "apply_patch",
			Description: "Apply a unified diff (as git diff or diff -u print it) to files of the workspace: changes, new files " +
				"(--- /dev/null), deletions (+++ /dev/null) and renames. Every hunk must apply exactly, or no file is changed.",
			Parameters: params([]string{"patch"},
				"patch", skills.TypeString, "The unified diff; paths are relative to the workspace (a/ and b/ prefixes are removed)"),
			Permissions: o.perms(skills.PermFileWrite),
		},
		Run: o.guarded("apply_patch", o.applyPatch),
	}, nil
}

// patchFile is one file's state while a patch is applied in memory.
type patchFile struct {
	data    []byte
	perm    fs.FileMode
	exists  bool // exists on disk now
	deleted bool // deleted by the patch
	touched bool // changed by the patch
}

func (o Options) applyPatch(ctx context.Context, args map[string]any) skills.Output {
	text := str(args, "patch")
	if len(text) > o.MaxEditBytes {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("apply_patch: the patch is %d bytes, at most %d", len(text), o.MaxEditBytes))
	}
	files, err := parsePatch(text)
	if err != nil {
		return skills.Failed(wire.ErrInvalidParams, "apply_patch: "+err.Error())
	}
	state := map[string]*patchFile{}
	var order []string
	held, maxHeld := 0, patchHeld*o.MaxEditBytes // bytes of files read and contents made
	tooMuch := skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("apply_patch: the files this patch reads and writes come to more than %d bytes in all; "+
		"no file was changed. Split it into smaller patches", maxHeld))
	load := func(arg string) (string, *patchFile, *skills.Output) {
		name, fail := o.path("apply_patch", arg)
		if fail != nil {
			return "", nil, fail
		}
		if name == "." {
			f := skills.Failed(wire.ErrInvalidParams, "apply_patch: a path names the workspace directory itself")
			return "", nil, &f
		}
		if pf, ok := state[name]; ok {
			return name, pf, nil
		}
		pf := &patchFile{perm: 0o644}
		rc, fi, err := o.Files.Open(ctx, name)
		switch {
		case err == nil:
			data, rerr := io.ReadAll(io.LimitReader(rc, int64(o.MaxEditBytes)+1))
			rc.Close() // read-only
			if rerr != nil {
				f := fileFailure(ctx, "apply_patch", arg, rerr)
				return "", nil, &f
			}
			if len(data) > o.MaxEditBytes {
				f := skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("apply_patch: %s is larger than %d bytes", arg, o.MaxEditBytes))
				return "", nil, &f
			}
			pf.data, pf.perm, pf.exists = data, fi.Mode().Perm(), true
			if held += len(data); held > maxHeld {
				return "", nil, &tooMuch
			}
		case errors.Is(err, fs.ErrNotExist):
		default:
			f := fileFailure(ctx, "apply_patch", arg, err)
			return "", nil, &f
		}
		state[name] = pf
		order = append(order, name)
		return name, pf, nil
	}
	var summary []string
	for _, f := range files {
		src := f.OldName
		if f.IsNew {
			src = f.NewName
		}
		srcName, in, fail := load(src)
		if fail != nil {
			return *fail
		}
		present := in.exists && !in.deleted || in.touched && !in.deleted
		switch {
		case f.IsNew && present:
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("apply_patch: %s already exists; the patch creates it", f.NewName))
		case !f.IsNew && !present:
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("apply_patch: %s does not exist; read the workspace and make the patch against it", src))
		}
		var out bytes.Buffer
		var base []byte
		if !f.IsNew {
			base = in.data
		}
		if err := gitdiff.Apply(&out, bytes.NewReader(base), f); err != nil {
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("apply_patch: %s: %v; no file was changed. Read the file and make the hunk match it exactly", src, err))
		}
		if out.Len() > o.MaxEditBytes {
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("apply_patch: %s would be larger than %d bytes", src, o.MaxEditBytes))
		}
		if held += out.Len(); held > maxHeld {
			return tooMuch
		}
		perm := in.perm
		if f.NewMode != 0 {
			perm = f.NewMode.Perm()
		}
		switch {
		case f.IsDelete:
			in.deleted, in.touched, in.data = true, true, nil
			summary = append(summary, "deleted "+src)
		case f.IsRename || f.IsCopy:
			dstName, dst, fail := load(f.NewName)
			if fail != nil {
				return *fail
			}
			if dstName != srcName && (dst.exists && !dst.deleted || dst.touched && !dst.deleted) {
				return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("apply_patch: %s already exists; the patch renames %s to it", f.NewName, src))
			}
			dst.data, dst.perm, dst.deleted, dst.touched = out.Bytes(), perm, false, true
			verb := "copied"
			if f.IsRename {
				in.deleted, in.touched, in.data = true, true, nil
				verb = "renamed"
			}
			summary = append(summary, fmt.Sprintf("%s %s to %s", verb, src, f.NewName))
		default:
			in.data, in.perm, in.deleted, in.touched = out.Bytes(), perm, false, true
			verb := "patched"
			if f.IsNew {
				verb = "created"
			}
			summary = append(summary, fmt.Sprintf("%s %s (%d hunks)", verb, src, len(f.TextFragments)))
		}
	}
	var changes []Change
	for _, name := range order {
		pf := state[name]
		switch {
		case !pf.touched:
		case pf.deleted && pf.exists:
			changes = append(changes, Change{Name: name, Delete: true})
		case !pf.deleted:
			changes = append(changes, Change{Name: name, Data: pf.data, Perm: pf.perm})
		}
	}
	if err := o.Files.(Batcher).Commit(ctx, changes); err != nil {
		return fileFailure(ctx, "apply_patch", "patch", fmt.Errorf("no file was changed: %w", err))
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(strings.Join(summary, "\n"))}}
}

// parsePatch parses a unified diff and checks what apply_patch supports.
// In a diff without git headers the a/ and b/ prefixes of names are
// removed, as git apply and patch -p1 do.
func parsePatch(text string) ([]*gitdiff.File, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("not a valid unified diff: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("no file changes found: give a unified diff with ---/+++ headers and @@ hunks")
	}
	if len(files) > maxPatchFiles {
		return nil, fmt.Errorf("the patch changes %d files, at most %d", len(files), maxPatchFiles)
	}
	git := strings.Contains(text, "diff --git ")
	for _, f := range files {
		if f.IsBinary {
			return nil, fmt.Errorf("%s: binary patches are not supported", cmpOr(f.NewName, f.OldName))
		}
		if !git {
			f.OldName, f.NewName = stripPrefix(f.OldName), stripPrefix(f.NewName)
		}
		if f.NewMode&fs.ModeSymlink != 0 || f.NewMode&0o170000 == 0o120000 {
			return nil, fmt.Errorf("%s: symlinks are not supported", f.NewName)
		}
	}
	return files, nil
}

// stripPrefix removes a leading a/ or b/ (the parser keeps one name of
// a traditional diff for both sides, so either may appear on either).
func stripPrefix(name string) string {
	for _, prefix := range []string{"a/", "b/"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" {
			return rest
		}
	}
	return name
}

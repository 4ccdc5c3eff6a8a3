package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// NewWrite returns the write tool: it replaces a file's content
// atomically, creating missing parent directories.
func NewWrite(o Options) (skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return skills.GoTool{}, err
	}
	return skills.GoTool{
		Tool: skills.Tool{
			Name:        "write",
			Description: "Write a file in the workspace, replacing it if it exists and creating missing directories.",
			Parameters: params([]string{"path", "content"},
				"path", skills.TypeString, "File to write, relative to the workspace (or absolute inside it)",
				"content", skills.TypeString, "The complete new content of the file"),
			Permissions: o.perms(skills.PermFileWrite),
		},
		Run: o.guarded("write", o.write),
	}, nil
}

func (o Options) write(ctx context.Context, args map[string]any) skills.Output {
	p, content := str(args, "path"), str(args, "content")
	if len(content) > o.MaxEditBytes {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("write %q: content is %d bytes, at most %d", p, len(content), o.MaxEditBytes))
	}
	name, fail := o.path("write", p)
	if fail != nil {
		return *fail
	}
	if name == "." {
		return skills.Failed(wire.ErrInvalidParams, "write: path names the workspace directory itself, not a file")
	}
	mode := fs.FileMode(0o644)
	if fi, err := o.Files.Stat(ctx, name); err == nil {
		if fi.IsDir() {
			return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("write %q: is a directory", p))
		}
		mode = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fileFailure(ctx, "write", p, err)
	}
	if err := o.Files.WriteFile(ctx, name, []byte(content), mode); err != nil {
		return fileFailure(ctx, "write", p, err)
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(fmt.Sprintf("wrote %d bytes to %s", len(content), p))}}
}

// NewEdit returns the edit tool: exact replacement of one occurrence of a
// text (or of all, when asked) in a file.
func NewEdit(o Options) (skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return skills.GoTool{}, err
	}
	t := skills.Tool{
		Name: "edit",
		Description: "Replace an exact text in a file of the workspace. old_text must occur exactly once " +
			"(include surrounding lines to make it unique) unless replace_all is true.",
		Parameters: params([]string{"path", "old_text", "new_text"},
			"path", skills.TypeString, "File to edit, relative to the workspace (or absolute inside it)",
			"old_text", skills.TypeString, "The exact text to replace, whitespace included",
			"new_text", skills.TypeString, "The text to put in its place",
			"replace_all", skills.TypeBoolean, "Replace every occurrence instead of exactly one (default false)"),
		Permissions: o.perms(skills.PermFileWrite),
	}
	return skills.GoTool{Tool: t, Run: o.guarded("edit", o.edit)}, nil
}

func (o Options) edit(ctx context.Context, args map[string]any) skills.Output {
	p, oldText, newText, all := str(args, "path"), str(args, "old_text"), str(args, "new_text"), boolean(args, "replace_all")
	if oldText == "" {
		return skills.Failed(wire.ErrInvalidParams, "edit: old_text must not be empty")
	}
	name, fail := o.path("edit", p)
	if fail != nil {
		return *fail
	}
	rc, fi, err := o.Files.Open(ctx, name)
	if err != nil {
		return fileFailure(ctx, "edit", p, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, int64(o.MaxEditBytes)+1))
	rc.Close() // read-only
	if err != nil {
		return fileFailure(ctx, "edit", p, err)
	}
	if len(data) > o.MaxEditBytes {
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("edit %q: file is larger than %d bytes; edit it with bash", p, o.MaxEditBytes))
	}
	text := string(data)
	n := strings.Count(text, oldText)
	switch {
	case n == 0:
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("edit %q: old_text not found; read the file and copy the text exactly, whitespace included", p))
	case n > 1 && !all:
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("edit %q: old_text occurs %d times; add surrounding lines to make it unique, or set replace_all", p, n))
	}
	// The size of the result is checked before it is built: strings.Replace
	// allocates it whole first, and a short old_text occurring a million
	// times with a long new_text would ask for gigabytes.
	if grow := len(newText) - len(oldText); grow > 0 && n > (o.MaxEditBytes-len(text))/grow {
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("edit %q: the result would be %d bytes (%d occurrences made %d bytes longer each), larger than %d",
			p, int64(len(text))+int64(n)*int64(grow), n, grow, o.MaxEditBytes))
	}
	text = strings.Replace(text, oldText, newText, n)
	if err := o.Files.WriteFile(ctx, name, []byte(text), fi.Mode().Perm()); err != nil {
		return fileFailure(ctx, "edit", p, err)
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(fmt.Sprintf("replaced %d occurrence(s) in %s", n, p))}}
}

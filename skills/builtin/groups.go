package builtin

import (
	"fmt"
	"slices"

	"github.com/evoclaw/evoclaw/skills"
)

// Tool group names, as agent.toml's builtin.groups takes them.
const (
	// GroupCoding is read, write, edit, bash, glob and apply_patch.
	GroupCoding = "coding"
	// GroupReadOnly is read, grep, find and glob: nothing that changes a
	// file or runs a command.
	GroupReadOnly = "read-only"
	// GroupAll is every tool of this package.
	GroupAll = "all"
	// GroupRemote is read, write, edit, bash, grep and find on a remote
	// backend: the caller sets Options.Files and Options.Exec (package
	// sshops).
	GroupRemote = "remote"
)

// factories maps tool names to their factories.
var factories = map[string]func(Options) (skills.GoTool, error){
	"read": NewRead, "write": NewWrite, "edit": NewEdit, "bash": NewBash, "grep": NewGrep, "find": NewFind,
	"glob": NewGlob, "apply_patch": NewApplyPatch,
}

// groupTools lists the tools of each group.
var groupTools = map[string][]string{
	GroupCoding:   {"read", "write", "edit", "bash", "glob", "apply_patch"},
	GroupReadOnly: {"read", "grep", "find", "glob"},
	GroupAll:      {"read", "write", "edit", "bash", "grep", "find", "glob", "apply_patch"},
	GroupRemote:   {"read", "write", "edit", "bash", "grep", "find"},
}

// Groups lists the group names.
func Groups() []string { return []string{GroupAll, GroupCoding, GroupReadOnly, GroupRemote} }

// Group returns the tools of the named group made with o.
func Group(name string, o Options) ([]skills.GoTool, error) {
	names, ok := groupTools[name]
	if !ok {
		return nil, fmt.Errorf("unknown built-in tool group %q (have %v)", name, Groups())
	}
	if name == GroupRemote && (o.Files == nil || o.Exec == nil) {
		return nil, fmt.Errorf("built-in tool group %q needs a remote backend (Options.Files and Options.Exec)", name)
	}
	return Tools(o, names...)
}

// Tools returns the named tools made with o, in the order given, once
// each.
func Tools(o Options, names ...string) ([]skills.GoTool, error) {
	var out []skills.GoTool
	var seen []string
	for _, n := range names {
		f, ok := factories[n]
		if !ok {
			return nil, fmt.Errorf("unknown built-in tool %q", n)
		}
		if slices.Contains(seen, n) {
			continue
		}
		seen = append(seen, n)
		t, err := f(o)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Coding returns the coding group's tools in the workspace dir.
func Coding(dir string) ([]skills.GoTool, error) { return Group(GroupCoding, Options{Dir: dir}) }

// ReadOnly returns the read-only group's tools in the workspace dir.
func ReadOnly(dir string) ([]skills.GoTool, error) { return Group(GroupReadOnly, Options{Dir: dir}) }

// All returns every tool of this package in the workspace dir.
func All(dir string) ([]skills.GoTool, error) { return Group(GroupAll, Options{Dir: dir}) }

package skills

import (
	"fmt"
	"slices"
	"strings"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// The permissions of the design's permission table. Every tool, built-in,
// skill or MCP, declares the ones it needs; a node grants some in
// [skills] permissions. A tool is offered only when all of its own are
// granted. Skills may declare other names (hw_read, sys_read, ...); they
// are matched as written.
const (
	// PermFileRead reads files of the workspace: read, grep, find, glob.
	PermFileRead = "file_read"
	// PermFileWrite changes files of the workspace: write, edit, apply_patch.
	PermFileWrite = "file_write"
	// PermShell runs shell commands: bash.
	PermShell = "shell"
	// PermNetwork makes network requests: webfetch, websearch, and lets a
	// sandboxed skill tool use the network.
	PermNetwork = "network"
	// PermGit reads and changes the workspace's git repository: git_*.
	PermGit = "git"
	// PermMemory reads and writes the agent's durable notes: memory_*.
	PermMemory = "memory"
	// PermSession manages sub-agent sessions (reserved by the design).
	PermSession = "session"
)

// PermissionNetwork is the permission that lets a sandboxed tool use the
// network; without it a sandboxed tool has none.
const PermissionNetwork = PermNetwork

// aliases maps older permission names to the design's: skills written
// before the table keep working. docs/SKILLS.md lists them.
var aliases = map[string]string{
	"fs_read":  PermFileRead,
	"fs_write": PermFileWrite,
	"net":      PermNetwork,
	"exec":     PermShell,
}

// CanonicalPermission returns the design's name of permission p: an alias
// (fs_read, fs_write, net, exec) becomes the name it stands for, anything
// else is returned as is.
func CanonicalPermission(p string) string {
	if c, ok := aliases[p]; ok {
		return c
	}
	return p
}

// Allowed reports whether tool may run with the granted permissions. Every
// permission the tool declares must be granted; having any one of them is
// not enough, since a tool that needs "shell" and "network" uses both. A
// tool without permissions is always allowed. Aliases count as the names
// they stand for, on either side. missing lists the permissions not
// granted, by their canonical names, in the tool's order, without repeats.
func Allowed(tool Tool, granted []string) (ok bool, missing []string) {
	for _, p := range tool.Permissions {
		p = CanonicalPermission(p)
		if !slices.ContainsFunc(granted, func(g string) bool { return CanonicalPermission(g) == p }) && !slices.Contains(missing, p) {
			missing = append(missing, p)
		}
	}
	return len(missing) == 0, missing
}

// Denied is the answer to a call of a tool whose permissions are not all
// granted, in the design's words: error type permission_denied, naming
// the permissions it lacks.
func Denied(tool string, missing []string) Output {
	return Failed(wire.ErrPermissionDenied, fmt.Sprintf(
		"Permission denied for tool '%s' (requires: %s). This agent may not use it; explain that to the user.",
		tool, strings.Join(missing, ", ")))
}

// Permissions lists the design's permission names, the vocabulary of the
// built-in tools.
func Permissions() []string {
	return []string{PermFileRead, PermFileWrite, PermShell, PermNetwork, PermGit, PermMemory, PermSession}
}

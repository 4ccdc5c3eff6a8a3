// Package builtin provides the tools every agent can offer without a skill
// directory: read, write, edit, bash, grep, find, glob and apply_patch.
// Each is made by a factory from Options and returned as a skills.GoTool,
// ready for skills.Toolset.Add; groups (Coding, ReadOnly, All) bundle
// them. Each tool requires its permission of the design's table
// (file_read, file_write or shell).
//
// # Backends
//
// Tools reach files only through FileOps and run commands only through
// ExecOps, two small interfaces this package owns. Local and LocalExec are
// the local backend; package sshops is a backend on a remote machine.
//
// # Workspace jail
//
// Every path a file tool receives is taken relative to the workspace (an
// absolute path must lie inside it) and checked lexically: ".." leaving
// the workspace is permission_denied before any file is touched. The local
// backend then opens every path through an os.Root of the workspace, which
// resolves each component with openat and refuses a symlink leading out;
// the check and the use are one operation, so swapping a directory for a
// symlink between them gains nothing.
//
// # Shell guard
//
// The bash tool refuses commands matching a denylist (rm -rf /, sudo,
// mkfs, dd if=, fork bombs, shutdown, reboot, ...). The list is a speed
// bump against an LLM's mistakes, not a security boundary: a shell has
// endless ways to spell a command. The boundary is the OS sandbox
// (Options.Sandbox) and the account the agent runs as.
//
// # Concurrency
//
// The tools and the local backend are safe for concurrent use.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package builtin

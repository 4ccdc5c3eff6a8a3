// Package proc runs one child process with a deadline, bounded output and no
// leftovers. It is the only place in evoclaw that starts tool binaries.
//
// # Process groups
//
// The child starts in a process group of its own. When the deadline passes
// or the context is done, Run sends SIGKILL to the whole group at once, with
// no SIGTERM first: tools are short-lived, their deadline is already the
// grace they get, and a second timer would only add latency and another way
// to hang. When the child exits on its own, Run also kills whatever it left
// running in its group, so background jobs of a tool (sh -c 'x &') never
// outlive the call. A descendant that left the group (setsid, setpgid) is
// not killed; if it still holds the output pipes, Run closes them after
// [Spec.WaitDelay] and returns.
//
// # Death of the agent
//
// On Linux every child gets SIGKILL when the process that ran Run dies,
// however it dies: it is started with the parent-death signal, from one OS
// thread that lives as long as the process (the signal follows the thread
// that forked, and Go retires threads). What the child started in its
// group is not reached; [Group.KillLeftovers] kills it from the next start
// of the agent, which finds the group through [GroupOf] recorded at start
// (see [WithOnStart]).
//
// # Output
//
// Stdout and stderr are each kept up to [Spec.MaxOutput] bytes. The rest is
// read and thrown away as it arrives, and only counted, so a tool that
// prints gigabytes neither blocks on a full pipe nor grows memory.
// [Spec.OnOutput] sees all of it as it is read, for streaming; it must copy
// what it keeps and return at once.
//
// # Errors
//
// Run returns an error only when the process could not be started or was
// stopped by the caller's context. A missing binary wraps [ErrNotFound], a
// binary that may not be executed wraps [ErrPermission]. When the context
// stops a running process, Run returns the killed process's Result (with
// Signal set) together with an error wrapping context.Cause. A non-zero
// exit status, a crash and the Spec's own timeout (Result.TimedOut) are
// results, not errors.
//
// # Concurrency
//
// Run is safe for concurrent use; every call owns its child, pipes and
// goroutines, and waits for all of them before it returns.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package proc

// Package sqlite is the warm audit store of an evoclaw node: the tool-call
// audit trail and the edge request log in one SQLite database, on the pure Go
// driver modernc.org/sqlite.
//
// A [Store] is the only writer of its database file. Auditors read the same
// file with [QueryReadOnly], which opens its own read-only connection and can
// run while the Store is writing (the database is in WAL mode, so readers do
// not block the writer nor see partial transactions).
//
// # Durability
//
// A write call returns after its transaction commits. With [SyncNormal] a
// committed record survives a crash or SIGKILL of the process; a power cut
// may lose the last commits. With [SyncFull] every commit is fsynced first.
//
// # Concurrency
//
// Store methods are safe for concurrent use. Writes are committed one
// transaction at a time, first in, first out, by one committer at a time:
// callers enqueue on a bounded queue (full means [ErrQueueFull] at once);
// the caller of a waited write that finds nobody committing commits the
// queue itself, on its own goroutine (no hand-off on an idle store), and
// writes queued while a commit runs go into the next transaction, up to
// Options.MaxBatch writes (group commit). Each caller gets its own result.
// Writes queued without a waiting caller (QueueToolCall, QueueLLMCall)
// linger up to Options.Linger for a waited write and share
// its commit. [Store.Close] stops accepting writes and commits what was
// queued.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package sqlite

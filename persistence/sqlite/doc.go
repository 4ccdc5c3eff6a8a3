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
// Store methods are safe for concurrent use. Every write goes through one
// goroutine owned by the Store: callers enqueue on a bounded queue (full
// means [ErrQueueFull] at once), and the writer commits whatever is pending,
// up to Options.MaxBatch writes, in one transaction (group commit), then
// answers each caller with its own result. [Store.Close] stops accepting
// writes, commits what was queued, and waits for the writer to exit.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package sqlite

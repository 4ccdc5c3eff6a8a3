// Package jobs runs scheduled tasks unattended: jobs declared in
// evoclaw.toml ([[jobs]]) or created at run time, each a schedule, a
// prompt, the agents it concerns, a tool allowlist, a time limit and a
// missed-run policy. Every run is a conversation of the node, and every
// decision about an instant (run, missed, skipped) is stored before
// anything starts, so a restart neither loses nor doubles a run.
//
// The rules of one tick are PlanAt, a pure function of the job, its
// watermark (the newest instant already decided) and the time. The
// Scheduler carries them out: it claims runs in the Store (one row per
// job, instant and agent, unique), starts each claimed run in a goroutine
// it owns, and records how it ended.
//
// # Time
//
// The Scheduler reads the time from a Clock, so tests move it by hand.
// Instants are wall-clock instants: a clock that jumps forward makes the
// passed instants a gap (the newest may run within the job's window, the
// rest are recorded missed), and a clock set back finds every instant up
// to the watermark already decided, so none runs twice.
//
// # Concurrency
//
// A Scheduler is safe for concurrent use. Tick, RunNow and the job
// changes are serialised; runs execute concurrently, at most
// Options.MaxRunning at once. Stop cancels the runs and waits for them.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package jobs

// Package rate holds the limiters put between outside input and what it
// costs: a token bucket (Limiter), one bucket per key with a bounded key set
// (Keyed), per-key limits on messages and bytes (Inbound), and a
// fixed-window quota that admits a few events per window and counts the
// rest (Window, and Quota for one window per key).
//
// The clock is the caller's: every method takes the current time, so tests
// drive the limiters with a fake clock and no sleeps. A time earlier than
// one already seen counts as that time. The zero value of each type is not
// ready; use the constructors. Every per-key type tracks a bounded number of
// keys, so a stream of made-up keys cannot grow it.
//
// # Concurrency
//
// Every type is safe for concurrent use. Inbound checks and takes the
// tokens of a key's two buckets under one lock, so a message is admitted or
// refused whole.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package rate

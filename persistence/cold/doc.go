// Package cold is the cold tier of the audit trail: a Turso / libSQL
// database (through github.com/tursodatabase/libsql-client-go) that keeps
// the records of many nodes long after their warm SQLite store has pruned
// them.
//
// A [Shipper] moves a node's chained records (tool calls, LLM calls,
// messages, events; see persistence/auditchain) from the warm store to the
// cold [Store] in batches, in chain order. Each batch is one atomic request;
// rows are keyed by record_id, so shipping a batch again changes nothing.
// After the cold commit the Shipper records its high-water mark in the warm
// store (durably, through the warm writer); a crash between the two only
// means the next batch is shipped twice, harmlessly. While the cold tier is
// unreachable, the normal state of an offline Pi, the Shipper retries with
// capped backoff and records simply wait in the warm store.
//
// The auth token comes from the environment ([TokenEnv]) and is only ever
// sent in the Authorization header: it is never put in a URL, a command
// line, an error or a log line.
//
// # Concurrency
//
// A Store is safe for concurrent use. A Shipper owns one goroutine, started
// by Start and stopped (and waited for) by Close; Status may be called from
// any goroutine.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package cold

// Package persistence defines what evoclaw keeps on disk and the small
// interfaces the rest of the project writes it through: the audit trail of
// tool calls ([AuditLog], one [ToolCall] per invocation), LLM requests
// ([LLMCallLog], one [LLMCall] each, for cost tracking), node and agent
// events ([EventLog]), conversation histories ([ConversationStore], one
// [Message] each) and the exactly-once request log an edge agent keeps per
// wire request_id ([RequestLog]).
//
// Implementations live in subpackages; persistence/sqlite is the warm store
// on the node itself. Auditors read the trail with plain SQL, so the record
// types here map one to one onto table columns.
//
// # Concurrency
//
// Implementations of [AuditLog] and [RequestLog] are safe for concurrent use.
// The helpers in this package ([Excerpt], [NewRecordID]) are pure functions.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package persistence

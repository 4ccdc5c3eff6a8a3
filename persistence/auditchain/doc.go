// Package auditchain makes the audit trail tamper-evident: every audited
// record (tool call, LLM call, message, event) carries a SHA-256 hash over
// the hash of the record before it in its node's chain and a canonical
// encoding of its own content. Editing, deleting or reordering a stored row
// breaks the chain at that row, which [Verifier] finds and names.
//
// A chain is identified by a chain id, one per database (one node writes one
// database). Its records are numbered by chain_seq 1, 2, 3, ... across the
// four tables; the first record chains to [Genesis] of the chain id. When
// retention deletes the oldest records, a checkpoint keeps the last deleted
// chain_seq and its hash, and verification resumes from it.
//
// What the chain cannot show: that the newest records were removed (nothing
// comes after them). `evoclaw audit verify` prints the head (last chain_seq
// and hash) so an auditor can note it elsewhere, and the cold tier holds a
// second copy.
//
// # Concurrency
//
// The functions are pure; a Verifier is used by one goroutine.
package auditchain

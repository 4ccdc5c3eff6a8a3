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
// The hashes are unkeyed, so anyone can check a chain's consistency, and
// anyone able to write the store can recompute them. A [Key], kept outside
// the store, authenticates the chain's anchors: the retention checkpoints
// it starts from and the seal of its head. With them a copy of the store
// cannot be forged without the key; [CheckCoverage] makes sure no row sits
// outside the verified part of the chain. What neither can show is a
// whole store rolled back to an older genuine copy: that needs an outside
// record of the head (the cold tier, or a noted head).
//
// # Concurrency
//
// The functions are pure; a Verifier is used by one goroutine.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package auditchain

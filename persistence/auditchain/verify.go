package auditchain

import (
	"errors"
	"fmt"
)

// Record is one chained row as read back from a store.
type Record struct {
	Table    string // table name
	RecordID string // the record's record_id
	Seq      int64  // chain_seq
	Hash     string // stored hash, hex
	Values   []any  // the table's Columns, in order (chain_seq last)
}

// ErrBroken reports a chain that does not verify; the error is a *BreakError.
var ErrBroken = errors.New("audit chain broken")

// Break kinds.
const (
	BreakEdited  = "edited"  // content does not match the stored hash chain
	BreakMissing = "missing" // chain_seq numbers are missing (deleted rows)
	BreakOrder   = "order"   // a chain_seq appears twice or goes backwards
	BreakHash    = "hash"    // the stored hash is malformed
	// BreakUnchained: a row of a chained table is not in the chain (its
	// chain_seq is NULL, not an integer, or not after the chain's start).
	BreakUnchained = "unchained"
	// BreakSchema: a chained table lacks a hashed column or has one its
	// schema version does not know, so its rows cannot all be covered.
	BreakSchema = "schema"
	// BreakAnchor: a checkpoint or the seal of the head is not
	// authenticated by the key (forged or edited).
	BreakAnchor = "anchor"
	// BreakTruncated: the newest records the seal vouches for are missing.
	BreakTruncated = "truncated"
	// BreakUnsealed: records after the sealed head, written behind the
	// node's back.
	BreakUnsealed = "unsealed"
)

// BreakError names the first record at which a chain fails to verify.
type BreakError struct {
	Kind     string // one of the Break* constants
	Table    string // table of the record where the break was found
	RecordID string // its record_id
	Seq      int64  // chain_seq of that record
	Expected int64  // chain_seq expected there (for BreakMissing)
	Detail   string // what is wrong, for BreakEdited and BreakHash
}

// Error names the break and the record.
// Every value that comes from the database is passed through Printable,
// so the message stays one bounded line whatever a forged row holds.
func (e *BreakError) Error() string {
	table, id, detail := Printable(e.Table), Printable(e.RecordID), Printable(e.Detail)
	if len(e.Detail) <= 400 {
		detail = e.Detail // built by this package from bounded parts
	}
	switch e.Kind {
	case BreakMissing:
		return fmt.Sprintf("%v: records with chain_seq %d..%d are missing (deleted?); next present is %s %s (chain_seq %d)",
			ErrBroken, e.Expected, e.Seq-1, table, id, e.Seq)
	case BreakOrder:
		return fmt.Sprintf("%v: %s %s has chain_seq %d, expected %d (duplicated or reordered rows)",
			ErrBroken, table, id, e.Seq, e.Expected)
	case BreakSchema:
		return fmt.Sprintf("%v: table %s: %s", ErrBroken, table, detail)
	case BreakUnchained:
		return fmt.Sprintf("%v: %s %s is not in the chain: %s", ErrBroken, table, id, detail)
	case BreakAnchor, BreakTruncated:
		return fmt.Sprintf("%v: %s", ErrBroken, detail)
	}
	if e.RecordID == "" {
		return fmt.Sprintf("%v: %s (chain_seq %d): %s", ErrBroken, table, e.Seq, detail)
	}
	return fmt.Sprintf("%v: %s %s (chain_seq %d): %s", ErrBroken, table, id, e.Seq, detail)
}

// Unwrap makes errors.Is(err, ErrBroken) hold.
func (e *BreakError) Unwrap() error { return ErrBroken }

// Verifier checks records of one chain fed in chain_seq order.
type Verifier struct {
	next  int64  // chain_seq expected next
	head  Digest // hash of the last verified record (or the start)
	count int64
}

// NewVerifier starts verifying after the record numbered afterSeq whose hash
// was prev: (0, Genesis(chainID)) for a whole chain, or a retention
// checkpoint.
func NewVerifier(afterSeq int64, prev Digest) *Verifier {
	return &Verifier{next: afterSeq + 1, head: prev}
}

// Add verifies r, the next record of the chain. It returns a *BreakError
// (wrapping ErrBroken) at the first record that does not verify; the
// Verifier must not be used after that.
func (v *Verifier) Add(r Record) error {
	switch {
	case r.Seq > v.next:
		return &BreakError{Kind: BreakMissing, Table: r.Table, RecordID: r.RecordID, Seq: r.Seq, Expected: v.next}
	case r.Seq < v.next:
		return &BreakError{Kind: BreakOrder, Table: r.Table, RecordID: r.RecordID, Seq: r.Seq, Expected: v.next}
	}
	stored, err := ParseDigest(r.Hash)
	if err != nil {
		return &BreakError{Kind: BreakHash, Table: r.Table, RecordID: r.RecordID, Seq: r.Seq, Detail: err.Error()}
	}
	got, err := Hash(v.head, r.Table, r.Values)
	if err != nil {
		return &BreakError{Kind: BreakHash, Table: r.Table, RecordID: r.RecordID, Seq: r.Seq, Detail: err.Error()}
	}
	if got != stored {
		return &BreakError{Kind: BreakEdited, Table: r.Table, RecordID: r.RecordID, Seq: r.Seq,
			Detail: "content does not match its hash: this record, or the hash of the record before it, was changed"}
	}
	v.head = stored
	v.next++
	v.count++
	return nil
}

// Head returns the chain_seq and hash of the last verified record (the
// start point when none was added).
func (v *Verifier) Head() (int64, Digest) { return v.next - 1, v.head }

// Count returns how many records verified.
func (v *Verifier) Count() int64 { return v.count }

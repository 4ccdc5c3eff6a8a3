// Package hot is the hot tier of the audit trail: a bounded in-memory ring
// of the most recent audited records, for `evoclaw logs` and live views.
// The warm store (persistence/sqlite) adds each record once it is committed,
// so the ring never shows a record the database does not hold.
//
// # Concurrency
//
// A Ring is safe for concurrent use. Add never blocks: when the ring is
// full the oldest entry is overwritten.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package hot

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DefaultCapacity is the number of entries a Ring keeps when NewRing is
// given zero.
const DefaultCapacity = 1024

// Kinds of entries, one per audited table.
const (
	KindTool    = "tool"    // a tool call
	KindLLM     = "llm"     // an LLM call
	KindMessage = "message" // a conversation message
	KindEvent   = "event"   // a node or agent event
)

// Entry is one audited record in display form.
type Entry struct {
	Seq            int64     `json:"seq"`                       // chain_seq of the record: increasing, unique per node
	Time           time.Time `json:"time"`                      // the record's time
	Kind           string    `json:"kind"`                      // one of the Kind* constants
	Node           string    `json:"node"`                      // node that wrote the record
	AgentID        string    `json:"agent_id,omitempty"`        // edge agent it concerns, if any
	ConversationID string    `json:"conversation_id,omitempty"` // conversation it belongs to, if any
	Name           string    `json:"name"`                      // tool name, provider/model, message role or event kind
	Status         string    `json:"status,omitempty"`          // success or error; empty when not applicable
	Detail         string    `json:"detail,omitempty"`          // error type and message, latency, tokens...
}

// String formats e as one log line.
func (e Entry) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-7s", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Kind)
	for _, kv := range [][2]string{{"node", e.Node}, {"agent", e.AgentID}, {"conv", e.ConversationID}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	fmt.Fprintf(&b, " %s", e.Name)
	if e.Status != "" {
		fmt.Fprintf(&b, " %s", e.Status)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, " %s", e.Detail)
	}
	return b.String()
}

// Filter selects entries. The zero Filter matches all.
type Filter struct {
	Kind    string // only this kind; empty for all
	AgentID string // only this agent; empty for all
}

// Match reports whether e passes f.
func (f Filter) Match(e Entry) bool {
	return (f.Kind == "" || e.Kind == f.Kind) && (f.AgentID == "" || e.AgentID == f.AgentID)
}

// Ring keeps the most recent entries.
type Ring struct {
	mu       sync.Mutex    // guards the fields below
	capacity int           // most entries kept
	buf      []Entry       // circular once full; grows up to capacity, so an idle node holds no empty slots
	next     int           // index the next Add writes
	full     bool          // buf has wrapped
	changed  chan struct{} // closed and replaced on every Add
}

// NewRing returns a Ring keeping capacity entries (DefaultCapacity when
// capacity <= 0).
func NewRing(capacity int) *Ring {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Ring{capacity: capacity, changed: make(chan struct{})}
}

// Add appends entries, overwriting the oldest when full.
func (r *Ring) Add(entries ...Entry) {
	if len(entries) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		if !r.full && r.next == len(r.buf) {
			if len(r.buf) == cap(r.buf) { // grow by doubling, never past capacity
				nb := make([]Entry, len(r.buf), min(max(2*len(r.buf), 64), r.capacity))
				copy(nb, r.buf)
				r.buf = nb
			}
			r.buf = r.buf[:len(r.buf)+1]
		}
		r.buf[r.next] = e
		r.next++
		if r.next == r.capacity {
			r.next, r.full = 0, true
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// After returns, oldest first, the entries with Seq > after that match f,
// at most limit of the newest of them (all when limit <= 0).
func (r *Ring) After(after int64, f Filter, limit int) []Entry {
	out, _ := r.Page(after, f, limit)
	return out
}

// Page is After plus the Seq to ask after next time: the newest Seq the
// ring held (matching f or not), or after when that is newer. A filtered
// reader that asks after head skips what did not match instead of being
// woken by it again.
func (r *Ring) Page(after int64, f Filter, limit int) (out []Entry, head int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	head = after
	n := r.next
	start := 0
	if r.full {
		n, start = len(r.buf), r.next
	}
	for i := range n {
		e := r.buf[(start+i)%len(r.buf)]
		if e.Seq > after && f.Match(e) {
			out = append(out, e)
		}
		head = max(head, e.Seq)
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, head
}

// Wait blocks until the ring holds an entry with Seq > after, or ctx ends
// (then it returns ctx's error).
func (r *Ring) Wait(ctx context.Context, after int64) error {
	for {
		r.mu.Lock()
		newest := int64(-1 << 63)
		if r.next > 0 || r.full {
			newest = r.buf[(r.next-1+len(r.buf))%len(r.buf)].Seq
		}
		ch := r.changed
		r.mu.Unlock()
		if newest > after {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// forgedToolCall inserts a tool call with the given chain_seq (an SQL
// expression) and a well-formed but made-up hash, as an intruder with write
// access to the file would.
func forgedToolCall(t *testing.T, path, recordID, seqExpr string) {
	t.Helper()
	tamper(t, path, `INSERT INTO tool_calls (record_id, ts, ts_ms, node, side, tool, status, elapsed_ms, result_bytes, chain_seq, hash)
		VALUES (?, '2025-01-01T00:00:00.000000000Z', 1, 'n', 'edge', 'shell', 'success', 1, 0, `+seqExpr+`, ?)`,
		recordID, strings.Repeat("ab", 32))
}

// tamperSchema runs a schema change behind the Store's back.
func tamperSchema(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("tamper %q: %v", stmt, err)
	}
}

// rechain recomputes every stored hash from genesis, as an intruder who
// knows the (public) hash format would after editing a row.
func rechain(t *testing.T, path string) {
	t.Helper()
	recs := readAll(t, path)
	chainID, _ := queryOne(t, path, "SELECT value FROM audit_meta WHERE key = 'chain_id'").(string)
	prev := auditchain.Genesis(chainID)
	if start, ok := queryOne(t, path, "SELECT coalesce(max(chain_seq), 0) FROM chain_checkpoints").(int64); ok && start > 0 {
		h, _ := queryOne(t, path, "SELECT hash FROM chain_checkpoints WHERE chain_seq = ?", start).(string)
		prev, _ = auditchain.ParseDigest(h)
		recs = recs[:0:0]
		for _, r := range readAll(t, path) {
			if r.Seq > start {
				recs = append(recs, r)
			}
		}
	}
	for _, r := range recs {
		h, err := auditchain.Hash(prev, r.Table, r.Values)
		if err != nil {
			t.Fatal(err)
		}
		tamper(t, path, "UPDATE "+r.Table+" SET hash = ? WHERE chain_seq = ?", h.String(), r.Seq)
		prev = h
	}
}

// appendForged appends a record that chains correctly to the current head:
// the unkeyed hash alone cannot tell it from a real one.
func appendForged(t *testing.T, path string) {
	t.Helper()
	recs := readAll(t, path)
	last := recs[len(recs)-1]
	prev, _ := auditchain.ParseDigest(last.Hash)
	vals := []any{"forged-tail", "2025-01-01T00:00:00.000000000Z", int64(1), "n", nil, "node_start", nil, last.Seq + 1}
	h, err := auditchain.Hash(prev, "events", vals)
	if err != nil {
		t.Fatal(err)
	}
	tamper(t, path, `INSERT INTO events (record_id, ts, ts_ms, node, agent_id, kind, detail, chain_seq, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		append(vals, h.String())...)
}

// TestVerifyChainRejectsForgeries: every way of adding, removing or
// rewriting rows behind the Store's back that an attack round tried (and
// their neighbours) must make verify fail, naming what it found.
func TestVerifyChainRejectsForgeries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		prune bool // prune the oldest records first (a legitimate checkpoint)
		do    func(t *testing.T, path string)
		want  string // in the error
	}{
		{"chain_seq 0", false, func(t *testing.T, p string) { forgedToolCall(t, p, "forged-0", "0") }, "forged-0"},
		{"negative chain_seq", false, func(t *testing.T, p string) { forgedToolCall(t, p, "forged-neg", "-5") }, "forged-neg"},
		{"blob chain_seq", false, func(t *testing.T, p string) { forgedToolCall(t, p, "forged-blob", "x'0102'") }, "forged-blob"},
		{"NULL chain_seq", false, func(t *testing.T, p string) { forgedToolCall(t, p, "forged-null", "NULL") }, "forged-null"},
		{"real chain_seq", false, func(t *testing.T, p string) { forgedToolCall(t, p, "forged-real", "2.5") }, "forged-real"},
		{"text chain_seq", false, func(t *testing.T, p string) { forgedToolCall(t, p, "forged-text", "'seven'") }, "forged-text"},
		{"chain_seq far beyond the head", false, func(t *testing.T, p string) { forgedToolCall(t, p, "forged-far", "1000") }, "forged-far"},
		{"chain_seq below the checkpoint", true, func(t *testing.T, p string) { forgedToolCall(t, p, "forged-old", "1") }, "forged-old"},
		{"record appended with a correct hash", false, appendForged, "forged-tail"},
		{"newest record deleted", false, func(t *testing.T, p string) {
			tamper(t, p, "DELETE FROM events WHERE chain_seq = (SELECT max(chain_seq) FROM events)")
		}, "newest"},
		{"whole chain rewritten from genesis", false, func(t *testing.T, p string) {
			tamper(t, p, "UPDATE tool_calls SET status = 'error' WHERE chain_seq = 1")
			rechain(t, p)
		}, "chain_seq"},
		{"oldest records deleted behind a made-up checkpoint", false, func(t *testing.T, p string) {
			h, _ := queryOne(t, p, "SELECT hash FROM messages WHERE chain_seq = 3").(string)
			for _, tbl := range []string{"tool_calls", "llm_calls", "messages"} {
				tamper(t, p, "DELETE FROM "+tbl+" WHERE chain_seq <= 3")
			}
			tamper(t, p, `INSERT INTO chain_checkpoints (chain_seq, hash, ts, deleted, reason) VALUES (3, ?, '2025-01-01T00:00:00.000000000Z', 3, 'x')`, h)
		}, "checkpoint"},
		{"made-up older checkpoint beside a real one", true, func(t *testing.T, p string) {
			tamper(t, p, `INSERT INTO chain_checkpoints (chain_seq, hash, ts, deleted, reason) VALUES (1, ?, '2025-01-01T00:00:00.000000000Z', 1, 'x')`, strings.Repeat("cd", 32))
		}, "checkpoint"},
		{"column added", false, func(t *testing.T, p string) {
			tamperSchema(t, p, "ALTER TABLE llm_calls ADD COLUMN note TEXT DEFAULT 'x'")
		}, "note"},
		{"column dropped", false, func(t *testing.T, p string) { tamperSchema(t, p, "ALTER TABLE tool_calls DROP COLUMN result_excerpt") }, "result_excerpt"},
		// The stored text is what an outside record compares with:
		// the same digest in upper case is a changed hash.
		{"a hash in upper case", false, func(t *testing.T, p string) {
			tamper(t, p, "UPDATE tool_calls SET hash = upper(hash) WHERE chain_seq = 1")
		}, "lower-case hex"},
		{"every hash in upper case", false, func(t *testing.T, p string) {
			for _, tbl := range []string{"tool_calls", "llm_calls", "messages", "events"} {
				tamper(t, p, "UPDATE "+tbl+" SET hash = upper(hash)")
			}
		}, "lower-case hex"},
		{"checkpoint hash in upper case", true, func(t *testing.T, p string) {
			tamper(t, p, "UPDATE chain_checkpoints SET hash = upper(hash)")
		}, "checkpoint"},
		{"checkpoint MAC in upper case", true, func(t *testing.T, p string) {
			tamper(t, p, "UPDATE chain_checkpoints SET mac = upper(mac)")
		}, "checkpoint"},
		{"seal hash in upper case", false, func(t *testing.T, p string) {
			tamper(t, p, "UPDATE chain_seal SET hash = upper(hash)")
		}, "seal"},
		{"seal MAC in upper case", false, func(t *testing.T, p string) {
			tamper(t, p, "UPDATE chain_seal SET mac = upper(mac)")
		}, "seal"},
		{"same chain_seq in two tables", false, func(t *testing.T, p string) {
			tamper(t, p, `INSERT INTO events (record_id, ts, ts_ms, node, kind, chain_seq, hash) VALUES ('forged-dup', '2025-01-01T00:00:00.000000000Z', 1, 'n', 'node_start', 6, ?)`, strings.Repeat("ab", 32))
		}, "chain_seq 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, path := openStore(t, Options{})
			fillMixed(t, s, 3)
			if tt.prune {
				if _, err := s.Prune(context.Background(), Retention{MaxAge: time.Nanosecond, Batch: 4}, time.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := VerifyChain(context.Background(), path); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			tt.do(t, path)
			_, err := VerifyChain(context.Background(), path)
			if !errors.Is(err, auditchain.ErrBroken) {
				t.Fatalf("after tampering: got %v, want an error wrapping ErrBroken", err)
			}
			t.Logf("%v", err)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not name %q", err, tt.want)
			}
		})
	}
}

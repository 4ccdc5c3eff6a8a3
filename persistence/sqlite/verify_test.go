package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// writeMixed writes n rounds of one record of each chained kind and returns
// the store's database path; the store is closed.
func writeMixed(t *testing.T, n int) string {
	t.Helper()
	s, path := openStore(t, Options{})
	fillMixed(t, s, n)
	// Closed: the file is the caller's (only one Store may write it).
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func fillMixed(t testing.TB, s *Store, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if err := s.RecordToolCall(ctx, sampleCall(i)); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordLLMCall(ctx, sampleLLMCall(i)); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendMessages(ctx, "c1", []persistence.Message{msg("user", "x"), msg("assistant", "y")}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordEvent(ctx, persistence.Event{Node: "n", Kind: persistence.EventAgentOnline, AgentID: "a"}); err != nil {
			t.Fatal(err)
		}
	}
}

// tamper runs stmt on the database behind the Store's back, as an intruder
// with write access to the file would.
func tamper(t *testing.T, path, stmt string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(stmt, args...)
	if err != nil {
		t.Fatalf("tamper %q: %v", stmt, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("tamper %q changed nothing", stmt)
	}
}

func TestVerifyChainIntactAcrossReopen(t *testing.T) {
	t.Parallel()
	path := writeMixed(t, 5)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fillMixed(t, s, 2) // the chain continues after a reopen
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyChain(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	const want = 7 * 5 // 7 rounds of 5 records
	if rep.Verified != want || rep.HeadSeq != want || rep.StartSeq != 0 || rep.Unchained != 0 || len(rep.HeadHash) != 64 {
		t.Fatalf("report %+v, want %d verified", rep, want)
	}
	if stored := queryOne(t, path, "SELECT hash FROM events WHERE chain_seq = ?", want); stored != rep.HeadHash {
		t.Fatalf("head hash %s is not the last record's %v", rep.HeadHash, stored)
	}
}

// TestVerifyChainRefusesNewerSchema: a database whose user_version is
// newer than this build knows is refused, as Open refuses it, with or
// without the key, rather than called intact by rules it may not follow.
func TestVerifyChainRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := writeMixed(t, 2)
	tamperSchema(t, path, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1))
	for _, o := range []VerifyOptions{{}, {Unkeyed: true}} {
		rep, err := VerifyChainWith(context.Background(), path, o)
		if !errors.Is(err, ErrSchemaTooNew) || errors.Is(err, auditchain.ErrBroken) ||
			!strings.Contains(err.Error(), fmt.Sprintf("schema version %d", SchemaVersion+1)) {
			t.Fatalf("%+v: got %v (report %+v), want ErrSchemaTooNew naming the version", o, err, rep)
		}
	}
}

func TestVerifyChainFindsTampering(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		do       func(t *testing.T, path string)
		wantKind string
		wantSeq  int64
	}{
		{"edited tool call", func(t *testing.T, path string) {
			tamper(t, path, "UPDATE tool_calls SET status = 'error' WHERE chain_seq = 6")
		}, auditchain.BreakEdited, 6},
		{"edited message body", func(t *testing.T, path string) {
			tamper(t, path, `UPDATE messages SET body = '{"role":"user","content":"forged"}' WHERE chain_seq = 8`)
		}, auditchain.BreakEdited, 8},
		{"json rewritten to equivalent text", func(t *testing.T, path string) {
			tamper(t, path, `UPDATE tool_calls SET params = '{ "n": 1 }' WHERE chain_seq = 6`)
		}, auditchain.BreakEdited, 6},
		{"deleted llm call", func(t *testing.T, path string) {
			tamper(t, path, "DELETE FROM llm_calls WHERE chain_seq = 7")
		}, auditchain.BreakMissing, 8},
		{"deleted oldest rows without checkpoint", func(t *testing.T, path string) {
			tamper(t, path, "DELETE FROM tool_calls WHERE chain_seq = 1")
		}, auditchain.BreakMissing, 2},
		{"reordered: two events swap chain_seq", func(t *testing.T, path string) {
			tamper(t, path, "UPDATE events SET chain_seq = -1 WHERE chain_seq = 5")
			tamper(t, path, "UPDATE events SET chain_seq = 5 WHERE chain_seq = 10")
			tamper(t, path, "UPDATE events SET chain_seq = 10 WHERE chain_seq = -1")
		}, auditchain.BreakEdited, 5},
		{"edited row with its hash recomputed", func(t *testing.T, path string) {
			// The intruder knows the format and rehashes the row: the
			// next record no longer chains to it.
			recs := readAll(t, path)
			r := recs[5] // chain_seq 6, a tool call
			r.Values[11] = "error"
			prev, _ := auditchain.ParseDigest(recs[4].Hash)
			h, err := auditchain.Hash(prev, r.Table, r.Values)
			if err != nil {
				t.Fatal(err)
			}
			tamper(t, path, "UPDATE tool_calls SET status = 'error', hash = ? WHERE chain_seq = 6", h.String())
		}, auditchain.BreakEdited, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeMixed(t, 3)
			if _, err := VerifyChain(context.Background(), path); err != nil {
				t.Fatalf("before tampering: %v", err)
			}
			tt.do(t, path)
			rep, err := VerifyChain(context.Background(), path)
			var be *auditchain.BreakError
			if !errors.As(err, &be) {
				t.Fatalf("after tampering: got %v, want a BreakError", err)
			}
			if be.Kind != tt.wantKind || be.Seq != tt.wantSeq {
				t.Fatalf("got %s at chain_seq %d (%v), want %s at %d", be.Kind, be.Seq, err, tt.wantKind, tt.wantSeq)
			}
			if rep == nil || rep.Verified != tt.wantSeq-1 && tt.wantKind != auditchain.BreakMissing {
				t.Fatalf("report %+v", rep)
			}
		})
	}
}

// readAll returns every chained record of the database at path.
func readAll(t *testing.T, path string) []auditchain.Record {
	t.Helper()
	conn, closeConn, err := openReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	recs, err := auditchain.ReadWindow(context.Background(), conn, auditchain.Filter{}, 0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A failed commit must not advance the writer's chain position: the next
// record chains to the last committed one.
func TestChainSurvivesFailedCommit(t *testing.T) {
	fail := false
	s, path := openStoreWithCommit(t, Options{}, func(commit func() error, n int) error {
		if fail {
			return errors.New("injected commit failure")
		}
		return commit()
	})
	ctx := context.Background()
	fillMixed(t, s, 1)
	fail = true
	if err := s.RecordToolCall(ctx, sampleCall(9)); err == nil {
		t.Fatal("commit failure not reported")
	}
	fail = false
	fillMixed(t, s, 1)
	rep, err := VerifyChain(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified != 10 {
		t.Fatalf("verified %d, want 10", rep.Verified)
	}
}

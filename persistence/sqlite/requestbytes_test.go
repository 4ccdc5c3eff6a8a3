package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// undoV12 takes a database back to schema v11 (with the version set by
// the caller): what migration v12 added, removed.
const undoV12 = `DROP TABLE request_log_held; DROP INDEX request_log_held_age;
	ALTER TABLE request_log DROP COLUMN report_sha256; ALTER TABLE request_log DROP COLUMN result_bytes;
	ALTER TABLE request_log DROP COLUMN error_type; ALTER TABLE request_log DROP COLUMN status;
	ALTER TABLE request_log DROP COLUMN held_bytes; ALTER TABLE request_log DROP COLUMN report_bytes;`

// finishRun begins id and finishes it with its audit row and report, as an
// edge agent does; odd sizes make a failed run.
func finishRun(t *testing.T, s *Store, id string, report []byte) persistence.ToolCall {
	t.Helper()
	ctx := context.Background()
	if st, _, err := s.BeginRun(ctx, id, persistence.Run{Tool: "big"}); err != nil || st != persistence.RequestNew {
		t.Fatalf("begin %s: %v %v", id, st, err)
	}
	rec := persistence.ToolCall{Node: "pi", Side: persistence.SideEdge, RequestID: id, Tool: "big",
		Status: persistence.StatusSuccess, ResultBytes: int64(len(report)) * 3}
	if len(report)%2 == 1 {
		rec.Status, rec.ErrorType, rec.Error = persistence.StatusError, "execution_failed", "exit 1"
	}
	if err := s.FinishToolCall(ctx, rec, id, report); err != nil {
		t.Fatalf("finish %s: %v", id, err)
	}
	return rec
}

// checkHeld fails unless the count of held bytes is what the rows hold,
// and returns it.
func checkHeld(t *testing.T, path string) int64 {
	t.Helper()
	held := queryOne(t, path, `SELECT bytes FROM request_log_held`).(int64)
	rows := queryOne(t, path, `SELECT coalesce(sum(held_bytes), 0) FROM request_log`).(int64)
	blobs := queryOne(t, path, `SELECT coalesce(sum(length(report)), 0) FROM request_log`).(int64)
	if held != rows || held != blobs {
		t.Fatalf("request_log_held says %d bytes, held_bytes sum to %d, the reports to %d", held, rows, blobs)
	}
	return held
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestRequestLogBoundedByBytes: past Options.RequestLogBytes the oldest
// reports are dropped in the finish's own transaction, the newest is
// always kept, and a dropped request is answered with its stub, never
// as new. Before, every report was kept whole until it was an hour old.
func TestRequestLogBoundedByBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		budget int64
		sizes  []int
		// kept are the indexes of the requests whose reports stay.
		kept []int
	}{
		{"under the bound", 10000, []int{3000, 3001, 3000}, []int{0, 1, 2}},
		{"the oldest dropped", 10000, []int{3000, 3001, 3000, 3001, 3000}, []int{2, 3, 4}},
		{"a report over the bound alone is kept", 1000, []int{500, 501, 5000}, []int{2}},
		{"one byte keeps only the newest", 1, []int{10, 11, 12}, []int{2}},
		{"empty reports are never counted", 10, []int{0, 0, 10}, []int{0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, path := openStore(t, Options{RequestLogBytes: tt.budget})
			var reports [][]byte
			var recs []persistence.ToolCall
			for i, n := range tt.sizes {
				r := bytes.Repeat([]byte{byte('a' + i)}, n)
				reports = append(reports, r)
				recs = append(recs, finishRun(t, s, fmt.Sprintf("r%d", i), r))
				if held := checkHeld(t, path); held > tt.budget && held != int64(n) {
					t.Fatalf("after r%d the log holds %d bytes, bound %d, newest %d", i, held, tt.budget, n)
				}
			}
			for i, r := range reports {
				id := fmt.Sprintf("r%d", i)
				k, err := s.BeginKept(ctx, id, persistence.Run{Tool: "big"})
				if err != nil {
					t.Fatal(err)
				}
				if kept := containsInt(tt.kept, i); kept {
					if k.State != persistence.RequestDone || !bytes.Equal(k.Report, r) {
						t.Fatalf("%s: %v with %d bytes, want done with its %d", id, k.State, len(k.Report), len(r))
					}
					continue
				}
				want := persistence.ReportStub{Tool: "big", Status: recs[i].Status, ErrorType: recs[i].ErrorType,
					ResultBytes: recs[i].ResultBytes, ReportBytes: int64(len(r)), ReportSHA256: sha(r)}
				if k.State != persistence.RequestDropped || k.Report != nil || k.Stub != want {
					t.Fatalf("%s: %v %q %+v, want dropped with %+v", id, k.State, k.Report, k.Stub, want)
				}
				// BeginRun never takes a dropped request for a new one.
				if st, rep, err := s.BeginRun(ctx, id, persistence.Run{}); err != nil || st != persistence.RequestDropped || rep != nil {
					t.Fatalf("BeginRun %s: %v %q %v", id, st, rep, err)
				}
			}
			if n := queryOne(t, path, `SELECT count(*) FROM request_log`); n != int64(len(tt.sizes)) {
				t.Fatalf("%v rows, want every request's", n)
			}
		})
	}
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestRequestLogHeldCountsEveryPath: the count of held bytes follows the
// reports through every path that stores or deletes one: FinishRequest,
// FinishInterrupted, a second finish (which keeps the first report) and
// the prune by age.
func TestRequestLogHeldCountsEveryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{RequestLogBytes: 1 << 20})
	steps := []struct {
		name string
		do   func() error
		want int64
	}{
		{"FinishRequest", func() error { return s.FinishRequest(ctx, "a", make([]byte, 100)) }, 100},
		{"a second finish keeps the first", func() error { return s.FinishRequest(ctx, "a", make([]byte, 900)) }, 100},
		{"FinishInterrupted", func() error {
			if _, _, err := s.BeginRun(ctx, "b", persistence.Run{Tool: "t"}); err != nil {
				return err
			}
			rec := persistence.ToolCall{Node: "pi", Side: persistence.SideEdge, RequestID: "b", Tool: "t",
				Status: persistence.StatusError, ErrorType: "interrupted", Error: "cut"}
			return s.FinishInterrupted(ctx, rec, "b", make([]byte, 50))
		}, 150},
		{"prune by age", func() error {
			_, err := s.PruneRequests(ctx, time.Now().Add(time.Hour))
			return err
		}, 0},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if held := checkHeld(t, path); held != st.want {
			t.Fatalf("%s: %d bytes held, want %d", st.name, held, st.want)
		}
	}
}

// TestMigrateV11BoundsItsRequestLog: a v11 database's request log keeps
// its rows and reports through the upgrade, they are counted, the chain
// verifies, and a report it had is dropped with a stub as good as a new
// one's (hash of the report, outcome from the run's audit row).
func TestMigrateV11BoundsItsRequestLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openStore(t, Options{})
	old := []byte(`{"payload":"the report of an older version"}`)
	rec := finishRun(t, s, "old", old)
	if err := s.FinishRequest(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// An older version stored an empty report as NULL.
	tamperSchema(t, path, undoV12+`UPDATE request_log SET report = NULL WHERE request_id = 'empty'; PRAGMA user_version = 11`)
	before, err := VerifyChain(ctx, path)
	if err != nil {
		t.Fatalf("v11 as it is: %v", err)
	}

	s2, err := Open(path, Options{RequestLogBytes: int64(len(old))})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if v := queryOne(t, path, "PRAGMA user_version"); v != int64(len(migrations)) {
		t.Fatalf("schema version %v, want %d", v, len(migrations))
	}
	if held := checkHeld(t, path); held != int64(len(old)) {
		t.Fatalf("%d bytes counted after the upgrade, want %d", held, len(old))
	}
	for id, want := range map[string][]byte{"old": old, "empty": {}} {
		st, rep, err := s2.BeginRequest(ctx, id)
		if err != nil || st != persistence.RequestDone || !bytes.Equal(rep, want) || rep == nil {
			t.Fatalf("%s after the upgrade: %v %q %v", id, st, rep, err)
		}
	}
	finishRun(t, s2, "new", []byte(`{"payload":"a newer one"}`))
	k, err := s2.BeginKept(ctx, "old", persistence.Run{})
	want := persistence.ReportStub{Tool: "big", Status: rec.Status, ErrorType: rec.ErrorType, ResultBytes: rec.ResultBytes,
		ReportBytes: int64(len(old)), ReportSHA256: sha(old)}
	if err != nil || k.State != persistence.RequestDropped || k.Stub != want {
		t.Fatalf("the older version's report past the bound: %v %+v %v, want dropped with %+v", k.State, k.Stub, err, want)
	}
	checkHeld(t, path)
	after, err := VerifyChain(ctx, path)
	if err != nil || after.Verified != before.Verified+1 {
		t.Fatalf("verify after the upgrade: %+v, %v (before %+v)", after, err, before)
	}
}

// TestDropReportsReadsTheOldestThroughItsIndex: finding the oldest held
// reports reads request_log_held_age, not the hour of rows the log keeps.
func TestDropReportsReadsTheOldestThroughItsIndex(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	plan := queryPlan(t, s.rdb, qOldestReports, dropBatch)
	if len(plan) != 1 || plan[0] != "SCAN request_log USING COVERING INDEX request_log_held_age" {
		t.Fatalf("plan %q, want one scan of request_log_held_age alone", plan)
	}
}

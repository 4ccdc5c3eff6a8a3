package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestMigrateV11WritesAtMostTheBoundOfReports: upgrading a request log
// that holds more reports than the bound writes about the bound's worth
// into the write-ahead log, not every report again. Counting them with one
// UPDATE rewrote each row, report and all: 528 MB of log for an agent's
// 524 MB of reports, and "disk is full" at every start where that much
// was not free. The newest reports within the bound are kept and counted,
// the older ones dropped with a stub as good as a new one's, and the
// chain verifies.
func TestMigrateV11WritesAtMostTheBoundOfReports(t *testing.T) {
	const reports, size = 48, 64 << 10
	budget := legacyReportBytes
	legacyReportBytes = 4 * size
	t.Cleanup(func() { legacyReportBytes = budget })
	ctx := context.Background()
	s, path := openStore(t, Options{RequestLogBytes: 2 * reports * size})
	recs := map[string]persistence.ToolCall{}
	bodies := map[string][]byte{}
	for i := range reports {
		id := fmt.Sprintf("req-%02d", i)
		bodies[id] = bytes.Repeat([]byte{byte('a' + i%26)}, size+i%2) // odd: a failed run
		recs[id] = finishRun(t, s, id, bodies[id])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tamperSchema(t, path, undoV12+`PRAGMA user_version = 11`)
	before, err := VerifyChain(ctx, path)
	if err != nil {
		t.Fatalf("v11 as it is: %v", err)
	}

	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if total := int64(reports * size); wal.Size() > total/4 {
		t.Errorf("the upgrade wrote %d bytes of log for %d bytes of reports and a bound of %d", wal.Size(), total, legacyReportBytes)
	}
	if held := checkHeld(t, path); held > legacyReportBytes || held < legacyReportBytes-2*size {
		t.Errorf("%d bytes counted after the upgrade, want the newest within %d", held, legacyReportBytes)
	}
	var kept, dropped int
	for i := range reports {
		id := fmt.Sprintf("req-%02d", i)
		k, err := s2.BeginKept(ctx, id, persistence.Run{})
		switch {
		case err != nil:
			t.Fatalf("%s: %v", id, err)
		case k.State == persistence.RequestDone && bytes.Equal(k.Report, bodies[id]):
			kept++
		case k.State == persistence.RequestDropped:
			dropped++
			if kept > 0 {
				t.Errorf("%s dropped after an older one was kept", id)
			}
			rec := recs[id]
			want := persistence.ReportStub{Tool: "big", Status: rec.Status, ErrorType: rec.ErrorType, ResultBytes: rec.ResultBytes,
				ReportBytes: int64(len(bodies[id])), ReportSHA256: sha(bodies[id])}
			if k.Stub != want {
				t.Errorf("%s dropped with %+v, want %+v", id, k.Stub, want)
			}
		default:
			t.Fatalf("%s after the upgrade: %v", id, k.State)
		}
	}
	if kept == 0 || dropped == 0 || kept+dropped != reports {
		t.Errorf("%d reports kept, %d dropped of %d", kept, dropped, reports)
	}
	after, err := VerifyChain(ctx, path)
	if err != nil || after.Verified != before.Verified {
		t.Fatalf("verify after the upgrade: %+v, %v (before %+v)", after, err, before)
	}
}

package actors

import (
	"fmt"
	"testing"
)

func TestRecentReportsForgetsTheOldestBeyondItsBound(t *testing.T) {
	var r recentReports
	if r.seen("a", "result") {
		t.Fatal("the zero value has seen a report")
	}
	r.add("a", "result")
	r.add("a", "result") // again: no second slot
	if !r.seen("a", "result") || r.seen("a", "error") {
		t.Fatal("keyed by request_id and report type")
	}
	for i := range recentReportsLen - 1 {
		r.add(fmt.Sprint(i), "result")
	}
	if !r.seen("a", "result") {
		t.Fatal("forgot a report within the bound")
	}
	r.add("one-more", "result")
	if r.seen("a", "result") || !r.seen("0", "result") || !r.seen("one-more", "result") {
		t.Fatal("beyond the bound, only the oldest is forgotten")
	}
	if len(r.set) != recentReportsLen || len(r.keys) != recentReportsLen {
		t.Fatalf("holds %d keys (%d in the ring), want %d", len(r.set), len(r.keys), recentReportsLen)
	}
}

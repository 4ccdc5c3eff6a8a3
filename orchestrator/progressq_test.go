package orchestrator

import (
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/actors"
)

// TestProgressQueueDropsAndReports: a reader that falls behind loses tool
// output first, then whole events beyond the bound, and is told how much.
func TestProgressQueueDropsAndReports(t *testing.T) {
	q := newProgressQueue()
	big := strings.Repeat("o", 100<<10)
	for range 4 { // 400 KiB of output: the last ones do not fit in 256 KiB
		q.push(actors.Progress{Kind: actors.ProgressToolOutput, Output: big})
	}
	for range progressQueueEvents { // fills the rest and one more
		q.push(actors.Progress{Kind: actors.ProgressToolEnd})
	}
	var got []actors.Progress
	var notes []DroppedNote
	cs := chatStream{progress: func(p actors.Progress) { got = append(got, p) }, dropped: func(d DroppedNote) { notes = append(notes, d) }}
	cs.drain(q)
	if len(got) != progressQueueEvents || got[0].Kind != actors.ProgressToolOutput || got[1].Kind != actors.ProgressToolOutput ||
		got[2].Kind != actors.ProgressToolEnd {
		t.Fatalf("kept %d events, first kinds %s %s %s", len(got), got[0].Kind, got[1].Kind, got[2].Kind)
	}
	want := DroppedNote{Kind: ProgressDropped, DroppedOutputBytes: 2 * int64(len(big)), DroppedEvents: 2}
	if len(notes) != 1 || notes[0] != want {
		t.Fatalf("notes %+v, want %+v", notes, want)
	}
	got, notes = nil, nil
	cs.drain(q)
	if len(got) != 0 || len(notes) != 0 {
		t.Fatalf("a second drain gave %d events and %v", len(got), notes)
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("ready was not signalled")
	}
}

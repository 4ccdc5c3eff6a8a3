package sqlite

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// Every checkpointEvery commits the Store checkpoints on its own
// connection, and after a pause the log starts again from its beginning.
func TestCheckpointsRunBesideTheCommits(t *testing.T) {
	s, path := openStore(t, Options{})
	record := func(n int) {
		t.Helper()
		for i := range n {
			if err := s.RecordToolCall(context.Background(), sampleCall(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	record(checkpointEvery)
	testenv.Eventually(t, 20*time.Second, func() bool { return s.ck.runs.Load() >= 1 }, "a checkpoint after checkpointEvery commits")
	first, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The log was copied into the database: the next commits reuse it from
	// its start, so it does not grow while they fit in what it holds.
	record(checkpointEvery / 2)
	after, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() > first.Size() {
		t.Fatalf("write-ahead log grew from %d to %d bytes after a checkpoint: it was not started again", first.Size(), after.Size())
	}
}

// Commits that never pause never let the log start again; the writer's own
// checkpoint at backstopPages bounds it.
func TestCheckpointBackstopBoundsTheLog(t *testing.T) {
	s, path := openStore(t, Options{})
	const commits = 6000 // about 200 MiB of log pages with no checkpoint
	for i := range commits {
		if err := s.RecordToolCall(context.Background(), sampleCall(i)); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The backstop checkpoint gives way while the background one runs, and
	// the log starts again only at a commit that finds it all copied: it
	// may pass backstopPages before it does.
	const most = 4 * backstopPages * 4096
	if fi.Size() > most {
		t.Fatalf("write-ahead log is %d bytes after %d commits, want at most %d", fi.Size(), commits, most)
	}
	if n := countRows(t, path); n != commits {
		t.Fatalf("%d rows, want %d", n, commits)
	}
}

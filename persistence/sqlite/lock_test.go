//go:build unix

package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestSecondWriterIsRefused: while a Store has the file, a second Open
// fails with ErrInUse and writes nothing; after Close the file opens
// again, and the chain verifies across both.
func TestSecondWriterIsRefused(t *testing.T) {
	ctx := context.Background()
	first, path := openStore(t, Options{})
	if err := first.RecordEvent(ctx, persistence.Event{Node: "a", Kind: persistence.EventNodeStart}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a refused Open leaves nothing behind that refuses the next
		second, err := Open(path, Options{})
		if err == nil {
			second.Close()
			t.Fatal("a second writer opened the database")
		}
		if !errors.Is(err, ErrInUse) {
			t.Fatalf("second Open: %v, want ErrInUse", err)
		}
	}
	if err := first.RecordEvent(ctx, persistence.Event{Node: "a", Kind: persistence.EventNodeStop}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := again.RecordEvent(ctx, persistence.Event{Node: "a", Kind: persistence.EventNodeStart}); err != nil {
		t.Fatal(err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyChain(ctx, path)
	if err != nil || rep.Verified != 3 || rep.HeadSeq != 3 {
		t.Fatalf("verify: %+v %v, want the three events of the one writer at a time", rep, err)
	}
}

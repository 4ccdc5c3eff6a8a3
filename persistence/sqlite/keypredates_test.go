package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestKeyPredatesTrail: a new database beside a key file that was already
// there (the trail it sealed deleted) is reported, and recorded as the
// new trail's first event; a fresh directory and a reopened database are
// not.
func TestKeyPredatesTrail(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t, Options{})
	if s.KeyPredatesTrail() {
		t.Fatal("a fresh directory reported a key that predates its trail")
	}
	if err := s.RecordEvent(ctx, persistence.Event{Node: "n", Kind: persistence.EventNodeStart}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.KeyPredatesTrail() {
		t.Fatal("a reopened database reported a key that predates its trail")
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	// The trail goes; its key stays.
	files, _ := filepath.Glob(path + "*")
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(DefaultKeyFile(path)); err != nil {
		t.Fatalf("the key went with the database: %v", err)
	}
	fresh, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !fresh.KeyPredatesTrail() {
		t.Fatal("a new database beside the old key was not reported")
	}
	fresh.NoteKeyPredatesTrail("n", "")
	if err := fresh.Close(); err != nil {
		t.Fatal(err)
	}
	if got := queryOne(t, path, "SELECT kind FROM events WHERE chain_seq = 1"); got != persistence.EventKeyPredatesTrail {
		t.Fatalf("first record of the new trail: %v", got)
	}
	if _, err := VerifyChain(ctx, path); err != nil {
		t.Fatal(err)
	}
}

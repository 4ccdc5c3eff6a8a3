package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// readOnlyStore records no decision, as on a card the kernel turned
// read-only: no write succeeds until the node restarts on a checked card.
type readOnlyStore struct{ Store }

func (s *readOnlyStore) DecideApproval(_ context.Context, id, _, _, _, _ string, _ time.Time) (persistence.Approval, error) {
	return persistence.Approval{}, fmt.Errorf("decide approval %s: %w", id, sqlite.ErrReadOnlyFS)
}

// TestSweepDeniesOnReadOnlyCard: an approval that expires while the card
// is read-only, so that its timeout cannot be recorded, still denies its
// waiting call at its time, saying why; it stays pending in the store, for
// the restart to deny. The call waited, and its chat with it, until
// [loop] chat_timeout (504 after 10 min by default).
func TestSweepDeniesOnReadOnlyCard(t *testing.T) {
	g, db, clock := sweepGate(t, func(db *sqlite.Store) Store { return &readOnlyStore{Store: db} })
	ctx := context.Background()
	id, done := awaitOne(g)
	clock.Add(59 * time.Second)
	if err := g.Sweep(ctx); err != nil {
		t.Fatalf("sweep before the expiry: %v", err)
	}
	select {
	case d := <-done:
		t.Fatalf("the call got %+v before its approval expired", d)
	default:
	}
	clock.Add(time.Second)
	if err := g.Sweep(ctx); !errors.Is(err, sqlite.ErrReadOnlyFS) {
		t.Fatalf("sweep on a read-only card: %v, want %v", err, sqlite.ErrReadOnlyFS)
	}
	select {
	case d := <-done:
		if d.Approved || d.State != persistence.ApprovalTimedOut || d.By != ByTimeout || d.Err != nil || !strings.Contains(d.Note, "could not be recorded") {
			t.Fatalf("decision %+v, want timed out by %s, saying it could not be recorded", d, ByTimeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call got no decision at its approval's expiry on a read-only card")
	}
	if a, err := db.Approval(ctx, id); err != nil || a.State != persistence.ApprovalPending {
		t.Fatalf("stored %+v, %v; want still pending (nothing was recorded)", a, err)
	}
}

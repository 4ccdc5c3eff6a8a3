package approvals

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestNodesNamesAreNoPersons: a decision under a name the node decides
// under is refused by the gate itself, not only by the HTTP API: a peer
// node of an older release forwards what its API took, and the trail
// read "denied by restart" as the node's own decision. The approval stays
// pending for a person.
func TestNodesNamesAreNoPersons(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	g, err := New(Config{Timeout: llm.Duration{Duration: time.Minute}, Rules: []Rule{{Tools: []string{"*"}}}}, Options{Store: db, Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pending := make(chan string, 1)
	done := make(chan actors.ApprovalDecision, 1)
	go func() {
		done <- g.Await(ctx, actors.ApprovalRequest{ConversationID: "c", RequestID: "r1", Tool: "reboot", Name: "reboot",
			Args: []byte(`{}`)}, func(id string) { pending <- id })
	}()
	id := <-pending
	for _, by := range []string{ByTimeout, ByRestart, ByCanceled} {
		if a, err := g.Decide(ctx, id, false, by, ""); !errors.Is(err, ErrNodeDecider) {
			t.Fatalf("decided by %q: %+v, %v; want %v", by, a, err, ErrNodeDecider)
		}
	}
	if a, err := db.Approval(ctx, id); err != nil || a.State != persistence.ApprovalPending {
		t.Fatalf("after the refusals: %+v, %v; want pending", a, err)
	}
	if a, err := g.Decide(ctx, id, true, "alice", ""); err != nil || a.State != persistence.ApprovalApproved {
		t.Fatalf("alice: %+v, %v", a, err)
	}
	if d := <-done; !d.Approved || d.By != "alice" {
		t.Fatalf("the call got %+v", d)
	}
}

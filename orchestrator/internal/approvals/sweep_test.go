package approvals

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// countingStore counts the reads of pending approvals and can fail them.
type countingStore struct {
	Store
	reads atomic.Int64
	fail  atomic.Bool
}

func (s *countingStore) Approvals(ctx context.Context, state string, limit int) ([]persistence.Approval, error) {
	s.reads.Add(1)
	if s.fail.Load() {
		return nil, errors.New("disk on fire")
	}
	return s.Store.Approvals(ctx, state, limit)
}

// sweepGate is a gate over a real store wrapped by wrap, with approvals
// that time out after a minute on a clock the test moves.
func sweepGate(t *testing.T, wrap func(*sqlite.Store) Store) (*Gate, *sqlite.Store, *testenv.Clock) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	clock := testenv.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	g, err := New(Config{Timeout: llm.Duration{Duration: time.Minute}, Rules: []Rule{{Tools: []string{"*"}}}},
		Options{Store: wrap(db), Node: "n", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return g, db, clock
}

// awaitOne asks g for one approval and returns its id and where the
// decision arrives.
func awaitOne(g *Gate) (string, <-chan actors.ApprovalDecision) {
	pending := make(chan string, 1)
	done := make(chan actors.ApprovalDecision, 1)
	go func() {
		done <- g.Await(context.Background(), actors.ApprovalRequest{ConversationID: "c", RequestID: "r1", Tool: "reboot", Name: "reboot",
			Args: []byte(`{}`)}, func(id string) { pending <- id })
	}()
	return <-pending, done
}

// TestSweepReadsOnlyWhenDue: the sweeper, which runs every second, reads
// the store once at start, then only when a pending approval can have
// expired or a read failed: an idle node does no I/O for it. An approval
// still times out at its time.
func TestSweepReadsOnlyWhenDue(t *testing.T) {
	var store *countingStore
	g, _, clock := sweepGate(t, func(db *sqlite.Store) Store { store = &countingStore{Store: db}; return store })
	ctx := context.Background()
	sweep := func(step string, wantReads int64) {
		t.Helper()
		if err := g.Sweep(ctx); err != nil && !store.fail.Load() {
			t.Fatalf("%s: %v", step, err)
		}
		if got := store.reads.Load(); got != wantReads {
			t.Fatalf("%s: %d reads of the store, want %d", step, got, wantReads)
		}
	}
	sweep("first sweep", 1)
	for range 5 {
		clock.Add(time.Second)
		sweep("idle, nothing pending", 1)
	}

	_, done := awaitOne(g)
	clock.Add(59 * time.Second)
	sweep("pending, not yet expired", 1)
	clock.Add(time.Second)
	sweep("expired", 2)
	if d := <-done; d.State != persistence.ApprovalTimedOut || d.Approved {
		t.Fatalf("decision %+v, want timed out", d)
	}
	clock.Add(time.Second)
	sweep("nothing pending again", 2)

	// A failed read is tried again at the next sweep.
	store.fail.Store(true)
	g.lowerNext(clock.Now())
	sweep("failing read", 3)
	store.fail.Store(false)
	clock.Add(time.Second)
	sweep("read again after a failure", 4)
	clock.Add(time.Second)
	sweep("and idle after it", 4)
}

// TestLateDecisionTimesOut: a person's decision that arrives once the
// approval expired, before the sweep (every second) timed it out, is
// refused as decided already, and the call is denied as timed out. It
// used to be taken: an "approve" up to a second late ran the call.
func TestLateDecisionTimesOut(t *testing.T) {
	const timeout = time.Minute
	for _, tc := range []struct {
		name    string
		after   time.Duration // from the request to the decision
		approve bool
		want    string // the approval's state once decided
	}{
		{"approve just in time", timeout - time.Millisecond, true, persistence.ApprovalApproved},
		{"deny just in time", timeout - time.Millisecond, false, persistence.ApprovalDenied},
		{"approve at expiry", timeout, true, persistence.ApprovalTimedOut},
		{"approve past expiry", timeout + 500*time.Millisecond, true, persistence.ApprovalTimedOut},
		{"deny past expiry", timeout + 500*time.Millisecond, false, persistence.ApprovalTimedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			clock := testenv.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
			g, err := New(Config{Timeout: llm.Duration{Duration: timeout}, Rules: []Rule{{Tools: []string{"*"}}}},
				Options{Store: db, Node: "n", Now: clock.Now})
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
			clock.Add(tc.after)
			a, err := g.Decide(ctx, id, tc.approve, "alice", "")
			late := tc.want == persistence.ApprovalTimedOut
			switch {
			case late && !errors.Is(err, sqlite.ErrDecided):
				t.Fatalf("late decision: %+v, %v; want %v", a, err, sqlite.ErrDecided)
			case !late && (err != nil || a.State != tc.want):
				t.Fatalf("decision in time: %+v, %v; want state %s", a, err, tc.want)
			}
			d := <-done
			if d.State != tc.want || d.Approved != (tc.want == persistence.ApprovalApproved) {
				t.Fatalf("the call got %+v, want state %s", d, tc.want)
			}
			stored, err := db.Approval(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			wantBy := "alice"
			if late {
				wantBy = ByTimeout
			}
			if stored.State != tc.want || stored.DecidedBy != wantBy {
				t.Fatalf("stored %s by %s, want %s by %s", stored.State, stored.DecidedBy, tc.want, wantBy)
			}
		})
	}
}

// fullStore records no decision while full is set, as on a full disk.
type fullStore struct {
	Store
	full atomic.Bool
}

func (s *fullStore) DecideApproval(ctx context.Context, id, state, by, note, node string, at time.Time) (persistence.Approval, error) {
	if s.full.Load() {
		return persistence.Approval{}, fmt.Errorf("decide approval %s: %w", id, sqlite.ErrDiskFull)
	}
	return s.Store.DecideApproval(ctx, id, state, by, note, node, at)
}

// TestSweepRetriesTimeoutNotRecorded: an approval that expires while its
// timeout cannot be recorded (a full disk) stays pending, and the first
// sweep after space returns times it out and denies the waiting call.
// Nothing swept it again: it stayed pending past its expiry and its chat
// waited for [loop] chat_timeout, unless another approval expired later.
func TestSweepRetriesTimeoutNotRecorded(t *testing.T) {
	var store *fullStore
	g, db, clock := sweepGate(t, func(db *sqlite.Store) Store { store = &fullStore{Store: db}; return store })
	ctx := context.Background()
	id, done := awaitOne(g)
	store.full.Store(true)
	clock.Add(time.Minute)
	if err := g.Sweep(ctx); !errors.Is(err, sqlite.ErrDiskFull) {
		t.Fatalf("sweep on a full disk: %v, want %v", err, sqlite.ErrDiskFull)
	}
	for range 3 {
		clock.Add(time.Second)
		if err := g.Sweep(ctx); !errors.Is(err, sqlite.ErrDiskFull) {
			t.Fatalf("sweep on a full disk, again: %v, want %v", err, sqlite.ErrDiskFull)
		}
	}
	select {
	case d := <-done:
		t.Fatalf("the call got %+v while its timeout was not recorded", d)
	default:
	}
	store.full.Store(false)
	clock.Add(time.Second)
	if err := g.Sweep(ctx); err != nil {
		t.Fatalf("sweep after space returned: %v", err)
	}
	select {
	case d := <-done:
		if d.State != persistence.ApprovalTimedOut || d.Approved {
			t.Fatalf("decision %+v, want timed out", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting call got no decision after space returned")
	}
	if a, err := db.Approval(ctx, id); err != nil || a.State != persistence.ApprovalTimedOut {
		t.Fatalf("stored %+v, %v; want timed out", a, err)
	}
}

package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

func msg(role, text string) persistence.Message {
	b, _ := json.Marshal(map[string]string{"role": role, "content": text})
	return persistence.Message{Role: role, Body: b}
}

// TestSharedHistory: two nodes' stores on one sqld append to and load the
// same conversations, with seqs that continue across nodes, all or nothing.
func TestSharedHistory(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	ctx := context.Background()
	a, err := OpenSharedHistory(srv.URL(), "", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenSharedHistory(srv.URL(), "", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	if got, err := a.LoadMessages(ctx, "c1"); err != nil || len(got) != 0 {
		t.Fatalf("unknown conversation: %v %v", got, err)
	}
	first := []persistence.Message{msg("user", "hi"), msg("assistant", "hello")}
	if err := a.AppendMessages(ctx, "c1", first); err != nil {
		t.Fatal(err)
	}
	if first[0].Seq != 1 || first[1].Seq != 2 || first[1].ConversationID != "c1" || first[1].Time.IsZero() {
		t.Fatalf("filled in: %+v", first)
	}
	if err := b.AppendMessages(ctx, "c1", []persistence.Message{msg("user", "again")}); err != nil {
		t.Fatal(err)
	}
	got, err := b.LoadMessages(ctx, "c1")
	if err != nil || len(got) != 3 {
		t.Fatalf("load: %v %v", got, err)
	}
	for i, m := range got {
		if m.Seq != int64(i+1) {
			t.Errorf("message %d has seq %d", i, m.Seq)
		}
	}
	if string(got[2].Body) != string(msg("user", "again").Body) {
		t.Errorf("body %s", got[2].Body)
	}
	// A bad message refuses the whole batch.
	err = a.AppendMessages(ctx, "c1", []persistence.Message{msg("user", "x"), {Role: "user", Body: []byte("{")}})
	if !errors.Is(err, persistence.ErrInvalidMessage) {
		t.Fatalf("invalid batch: %v", err)
	}
	if got, _ := a.LoadMessages(ctx, "c1"); len(got) != 3 {
		t.Fatalf("after a refused batch: %d messages", len(got))
	}
	// The end of a conversation, oldest first, without reading the rest.
	for _, tt := range []struct {
		id    string
		limit int
		want  []int64
	}{
		{"c1", 2, []int64{2, 3}},
		{"c1", 1, []int64{3}},
		{"c1", 10, []int64{1, 2, 3}},
		{"unknown", 5, []int64{}},
	} {
		got, err := b.RecentMessages(ctx, tt.id, tt.limit)
		if err != nil || got == nil {
			t.Fatalf("recent %d of %s: %v %v", tt.limit, tt.id, got, err)
		}
		seqs := []int64{}
		for _, m := range got {
			seqs = append(seqs, m.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tt.want) {
			t.Errorf("recent %d of %s: seqs %v, want %v", tt.limit, tt.id, seqs, tt.want)
		}
	}
	if last, err := a.RecentMessages(ctx, "c1", 1); err != nil || string(last[0].Body) != string(msg("user", "again").Body) {
		t.Errorf("last message: %v %v", last, err)
	}
	if _, err := a.RecentMessages(ctx, "c1", 0); err == nil {
		t.Error("a limit of 0 accepted")
	}
	convs, err := a.Conversations(ctx, 10)
	if err != nil || len(convs) != 1 || convs[0].ID != "c1" || convs[0].MessageCount != 3 {
		t.Fatalf("conversations: %+v %v", convs, err)
	}
}

// TestSharedHistoryConcurrentAppends: nodes appending to one conversation
// at once (an owner change mid-chat) never share a seq; a batch that
// loses the race fails whole.
func TestSharedHistoryConcurrentAppends(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	ctx := context.Background()
	var stores []*SharedHistory
	for i := range 3 {
		s, err := OpenSharedHistory(srv.URL(), "", fmt.Sprint("n", i))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := stores[i%3].AppendMessages(ctx, "c", []persistence.Message{msg("user", fmt.Sprint(i)), msg("assistant", fmt.Sprint(i))})
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got, err := stores[0].LoadMessages(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*ok || ok == 0 {
		t.Fatalf("%d batches succeeded, %d messages stored", ok, len(got))
	}
	for i, m := range got {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
		if i%2 == 1 {
			var u, a map[string]string
			_ = json.Unmarshal(got[i-1].Body, &u)
			_ = json.Unmarshal(m.Body, &a)
			if u["content"] != a["content"] {
				t.Fatalf("batches interleaved at seq %d: %s then %s", m.Seq, got[i-1].Body, m.Body)
			}
		}
	}
}

// TestSharedHistoryWaitsForALock: another writer of the database (the
// audit cold tier shipping to the same sqld) holds its write lock; the
// append waits for it instead of failing the chat "database is locked".
func TestSharedHistoryWaitsForALock(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	ctx := context.Background()
	h, err := OpenSharedHistory(srv.URL(), "", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.AppendMessages(ctx, "c", []persistence.Message{msg("user", "first")}); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("libsql", srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE other_writer (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.AppendMessages(ctx, "c", []persistence.Message{msg("user", "second")}) }()
	time.Sleep(300 * time.Millisecond) // hold the lock a while: the append meets it
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("append while another writer held the lock: %v", err)
	}
	if got, _ := h.LoadMessages(ctx, "c"); len(got) != 2 {
		t.Fatalf("%d messages", len(got))
	}
}

func TestBusy(t *testing.T) {
	for s, want := range map[string]bool{
		"failed to execute SQL:\nSQLite error: database is locked": true,
		"SQLITE_BUSY":              true,
		"UNIQUE constraint failed": false,
	} {
		if got := busy(errors.New(s)); got != want {
			t.Errorf("busy(%q) = %v", s, got)
		}
	}
}

// TestPruneHistory: conversations whose newest message is older than the
// cutoff go whole, across several batches; one with any newer message
// keeps all of its messages; a pruned conversation starts again at seq 1.
func TestPruneHistory(t *testing.T) {
	srv := sqldtest.Start(t, sqldtest.Options{})
	ctx := context.Background()
	h := openShared(t, srv.URL(), "a")
	now := time.Now()
	old, recent := now.Add(-3*time.Hour), now.Add(-time.Minute)
	at := func(ts time.Time, role, text string) persistence.Message {
		m := msg(role, text)
		m.Time = ts
		return m
	}
	appendAll := func(id string, msgs ...persistence.Message) {
		t.Helper()
		if err := h.AppendMessages(ctx, id, msgs); err != nil {
			t.Fatal(err)
		}
	}
	// 250 stale conversations of two messages (more than two batches),
	// with fresh ones between them in id order.
	const stale = 2*pruneBatch + 50
	var gone []string
	for i := range stale {
		id := fmt.Sprintf("c%04d-old", i)
		appendAll(id, at(old, "user", "q"), at(old, "assistant", "a"))
		gone = append(gone, id)
		if i%40 == 0 {
			appendAll(fmt.Sprintf("c%04d-new", i), at(recent, "user", "q"))
		}
	}
	appendAll("mixed", at(old, "user", "q1"), at(old, "assistant", "a1"), at(recent, "user", "q2"))
	appendAll("fresh", at(recent, "user", "q"))

	deleted, err := h.PruneHistory(ctx, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if deleted != 2*stale {
		t.Errorf("deleted %d messages, want %d", deleted, 2*stale)
	}
	for _, id := range []string{gone[0], gone[pruneBatch-1], gone[pruneBatch], gone[stale-1]} {
		if got, err := h.LoadMessages(ctx, id); err != nil || len(got) != 0 {
			t.Errorf("%s after the prune: %d messages, %v", id, len(got), err)
		}
	}
	for id, want := range map[string]int{"mixed": 3, "fresh": 1, "c0000-new": 1, "c0240-new": 1} {
		if got, err := h.LoadMessages(ctx, id); err != nil || len(got) != want {
			t.Errorf("%s after the prune: %d messages, want %d (%v)", id, len(got), want, err)
		}
	}
	list, err := h.Conversations(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 + (stale+39)/40; len(list) != want {
		t.Errorf("%d conversations left, want %d", len(list), want)
	}
	if n, err := h.PruneHistory(ctx, now.Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("second prune: %d, %v; want nothing to delete", n, err)
	}
	next := []persistence.Message{msg("user", "back")}
	appendAll(gone[0], next...)
	if next[0].Seq != 1 {
		t.Errorf("a pruned conversation continues at seq %d, want 1", next[0].Seq)
	}

	// A pass whose context has ended deletes nothing and says so.
	appendAll("late", at(old, "user", "q"))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.PruneHistory(cctx, now.Add(-time.Hour)); err == nil {
		t.Error("a prune with an ended context succeeded")
	}
	if got, _ := h.LoadMessages(ctx, "late"); len(got) != 1 {
		t.Errorf("late: %d messages after a cancelled prune", len(got))
	}
}

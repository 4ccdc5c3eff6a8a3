package sqlite

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
)

// gate is a commit seam that holds commits until opened and records the
// size of every committed transaction.
type gate struct {
	entered chan struct{} // receives once per commit that reached the seam

	mu      sync.Mutex // guards release, isOpen and sizes
	release chan struct{}
	isOpen  bool
	sizes   []int
}

// openGated opens a store whose commits wait at a closed gate. The gate
// opens at cleanup before the store closes, so a failing test cannot hang
// in Close.
func openGated(t *testing.T, opts Options) (*Store, string, *gate) {
	t.Helper()
	g := &gate{entered: make(chan struct{}, 1000), release: make(chan struct{})}
	s, path := openStoreWithCommit(t, opts, g.commit)
	t.Cleanup(g.open) // runs before the Close registered by openStore
	return s, path, g
}

func (g *gate) commit(commit func() error, n int) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	g.mu.Lock()
	release := g.release
	g.mu.Unlock()
	<-release
	g.mu.Lock()
	g.sizes = append(g.sizes, n)
	g.mu.Unlock()
	return commit()
}

// open lets held and later commits through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.isOpen {
		close(g.release)
		g.isOpen = true
	}
}

// hold makes later commits wait again until the next open.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isOpen {
		g.release = make(chan struct{})
		g.isOpen = false
	}
}

func (g *gate) committed() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

// goRecord runs RecordToolCall in a goroutine; the result arrives on the
// returned channel.
func goRecord(s *Store, c persistence.ToolCall) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.RecordToolCall(context.Background(), c) }()
	return ch
}

func TestGroupCommitBatches(t *testing.T) {
	s, path, g := openGated(t, Options{})

	// The first write holds the writer inside its commit...
	first := goRecord(s, sampleCall(0))
	<-g.entered
	// ...while the next ones pile up in the queue.
	const waiting = 100
	results := make([]<-chan error, waiting)
	for i := range results {
		results[i] = goRecord(s, sampleCall(i+1))
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return queued(s) == waiting }, "writes to queue up")
	g.open()

	for i, ch := range append(results, first) {
		if err := <-ch; err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if got := g.committed(); len(got) != 2 || got[0] != 1 || got[1] != waiting {
		t.Fatalf("commit sizes %v, want [1 %d]: the queued writes must share one transaction", got, waiting)
	}
	if n := countRows(t, path); n != waiting+1 {
		t.Fatalf("count(*) = %d, want %d", n, waiting+1)
	}
}

func TestGroupCommitRespectsMaxBatch(t *testing.T) {
	s, _, g := openGated(t, Options{MaxBatch: 7})
	first := goRecord(s, sampleCall(0))
	<-g.entered
	results := make([]<-chan error, 20)
	for i := range results {
		results[i] = goRecord(s, sampleCall(i+1))
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return queued(s) == len(results) }, "writes to queue up")
	g.open()
	for _, ch := range append(results, first) {
		if err := <-ch; err != nil {
			t.Error(err)
		}
	}
	if got := g.committed(); !equalInts(got, []int{1, 7, 7, 6}) {
		t.Fatalf("commit sizes %v, want [1 7 7 6]", got)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQueueFull(t *testing.T) {
	s, path, g := openGated(t, Options{QueueLen: 3, MaxBatch: 1})
	first := goRecord(s, sampleCall(0)) // taken off the queue, held in commit
	<-g.entered
	var results []<-chan error
	for i := range 3 {
		results = append(results, goRecord(s, sampleCall(i+1)))
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return queued(s) == 3 }, "the queue to fill")

	err := s.RecordToolCall(context.Background(), sampleCall(99))
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("RecordToolCall on a full queue: got %v, want ErrQueueFull", err)
	}
	_, _, err = s.BeginRequest(context.Background(), "r")
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("BeginRequest on a full queue: got %v, want ErrQueueFull", err)
	}

	g.open()
	for _, ch := range append(results, first) {
		if err := <-ch; err != nil {
			t.Error(err)
		}
	}
	if n := countRows(t, path); n != 4 {
		t.Fatalf("count(*) = %d, want 4 (the refused write must not be stored)", n)
	}
}

func TestConstraintViolationFailsOnlyItsCaller(t *testing.T) {
	s, path, g := openGated(t, Options{})
	g.open() // let the setup write through
	dup := sampleCall(0)
	if err := s.RecordToolCall(context.Background(), dup); err != nil {
		t.Fatal(err)
	}
	<-g.entered

	// Hold the writer again so that the bad write lands in a batch with
	// good ones.
	g.hold()
	blocker := goRecord(s, sampleCall(1))
	<-g.entered
	calls := make([]persistence.ToolCall, 10)
	results := make([]<-chan error, len(calls))
	for i := range calls {
		calls[i] = sampleCall(i + 2)
		if i == 4 {
			calls[i].RecordID = dup.RecordID
		}
		results[i] = goRecord(s, calls[i])
		// Enqueue in order, so that the bad write sits mid-batch.
		testenv.Eventually(t, 20*time.Second, func() bool { return queued(s) == i+1 }, "the write to queue up")
	}
	g.open()
	if err := <-blocker; err != nil {
		t.Fatal(err)
	}
	for i, ch := range results {
		err := <-ch
		switch {
		case i == 4 && (err == nil || !strings.Contains(err.Error(), "UNIQUE")):
			t.Errorf("duplicate record: got %v, want a UNIQUE constraint error", err)
		case i != 4 && err != nil:
			t.Errorf("write %d failed with the duplicate's batch: %v", i, err)
		}
	}
	if n := countRows(t, path); n != 2+9 {
		t.Fatalf("count(*) = %d, want 11", n)
	}
}

func TestCommitFailureThenRecovery(t *testing.T) {
	s, path, full := openFullDiskStore(t)
	lost := sampleCall(1)
	err := s.RecordToolCall(context.Background(), lost)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("RecordToolCall with a full disk: got %v, want ENOSPC", err)
	}
	for _, want := range []string{"record tool call", lost.RecordID, "commit audit transaction", "no space left on device"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	_, _, err = s.BeginRequest(context.Background(), "req-full")
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("BeginRequest with a full disk: got %v, want ENOSPC", err)
	}
	if h := s.WriteHealth(); !h.Failing() || !h.DiskFull || !strings.Contains(h.LastError, "no space left") {
		t.Fatalf("write health on a full disk: %+v, want failing, disk full", h)
	}

	full.Store(false)
	kept := sampleCall(2)
	if err := s.RecordToolCall(context.Background(), kept); err != nil {
		t.Fatalf("RecordToolCall after the disk recovered: %v", err)
	}
	if h := s.WriteHealth(); h.Failing() || h.LastOK.IsZero() {
		t.Fatalf("write health after recovery: %+v, want not failing", h)
	}
	if state, _, err := s.BeginRequest(context.Background(), "req-full"); err != nil || state != persistence.RequestNew {
		t.Fatalf("BeginRequest after recovery: %v %v, want new (the failed begin must not have been stored)", state, err)
	}
	for id, want := range map[string]int64{lost.RecordID: 0, kept.RecordID: 1} {
		if n := queryOne(t, path, "SELECT count(*) FROM tool_calls WHERE record_id = ?", id); n != want {
			t.Errorf("record %s: %v rows, want %d", id, n, want)
		}
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	s, path, g := openGated(t, Options{MaxBatch: 4})
	first := goRecord(s, sampleCall(0))
	<-g.entered
	results := []<-chan error{first}
	for i := range 10 {
		results = append(results, goRecord(s, sampleCall(i+1)))
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return queued(s) == 10 }, "writes to queue up")

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	testenv.Eventually(t, 20*time.Second, func() bool {
		s.wq.mu.Lock()
		defer s.wq.mu.Unlock()
		return s.wq.closed
	}, "Close to start")
	// Close has stopped taking writes while the queued ones still wait.
	if err := s.RecordToolCall(context.Background(), sampleCall(99)); !errors.Is(err, ErrClosed) {
		t.Fatalf("RecordToolCall while closing: got %v, want ErrClosed", err)
	}
	g.open()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, ch := range results {
		if err := <-ch; err != nil {
			t.Errorf("queued write %d: %v", i, err)
		}
	}
	if n := countRows(t, path); n != 11 {
		t.Fatalf("count(*) = %d after Close, want 11", n)
	}
}

func TestCanceledWhileQueuedStillCommits(t *testing.T) {
	s, path, g := openGated(t, Options{})
	first := goRecord(s, sampleCall(0))
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	c := sampleCall(1)
	errCh := make(chan error, 1)
	go func() { errCh <- s.RecordToolCall(ctx, c) }()
	testenv.Eventually(t, 20*time.Second, func() bool { return queued(s) == 1 }, "the write to queue up")
	cancel()
	if err := <-errCh; !errors.Is(err, context.Canceled) {
		t.Fatalf("RecordToolCall after cancel: got %v, want context.Canceled", err)
	}
	g.open()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, func() bool {
		return queryOne(t, path, "SELECT count(*) FROM tool_calls WHERE record_id = ?", c.RecordID) == int64(1)
	}, "the abandoned write to commit")
}

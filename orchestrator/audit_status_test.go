package orchestrator

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestAuditStatusReadsOneAtATime: GET /v1/audit/status opens its own
// connection to the audit database; clients asking at once share one
// read at a time instead of each opening one (300 at once took a node
// from 90 to 370 MB and 900 open files). Every client still gets the
// status. SQLite keeps a closed connection's file open while another
// connection of the process holds a lock on it, so the files open on
// audit.db count the connections that were open at once.
func TestAuditStatusReadsOneAtATime(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count open files:", err)
	}
	node, base, token := consoleNode(t)
	db, err := filepath.EvalSymlinks(node.AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	openOnDB := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		n := 0
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == db {
				n++
			}
		}
		return n
	}
	before := openOnDB()
	var most atomic.Int32
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int32(openOnDB()); n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	const clients = 48
	var wg sync.WaitGroup
	errs := make(chan string, clients*3)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				resp := send(t, "GET", base+"/v1/audit/status", token, nil)
				var st AuditTierStatus
				err := json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || err != nil || st.Records == 0 {
					errs <- resp.Status
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for e := range errs {
		t.Fatalf("a client's status: %s (or no records), want 200 with the records", e)
	}
	if m := max(int(most.Load()), openOnDB()); m > before+2 {
		t.Fatalf("%d files open on audit.db while %d clients asked for its status (%d before): want a connection or two, not one each",
			m, clients, before)
	}
}

// TestSharedReadIsFresh: a caller that arrives while a read runs gets the
// next read, which started after it asked, shared with every caller that
// arrived meanwhile; one read runs at a time; a caller that leaves does
// not end the read for the others; after close a call fails at once.
func TestSharedReadIsFresh(t *testing.T) {
	var reads, running, most atomic.Int32
	gate := make(chan struct{})
	s := newSharedRead(func(ctx context.Context) (int32, error) {
		if r := running.Add(1); r > most.Load() {
			most.Store(r)
		}
		defer running.Add(-1)
		n := reads.Add(1)
		<-gate
		return n, nil
	})
	first := s.join()
	testenv.Eventually(t, 5*time.Second, func() bool { return reads.Load() == 1 }, "the first read running")
	gone, leave := context.WithCancel(context.Background())
	leave()
	if v, err := s.do(gone); err == nil {
		t.Fatalf("a caller that left got %d, want its context's error", v)
	}
	var later []*readCall[int32]
	for range 5 {
		later = append(later, s.join())
	}
	gate <- struct{}{}
	if <-first.done; first.val != 1 || first.err != nil {
		t.Fatalf("first caller got read %d (%v), want 1", first.val, first.err)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return reads.Load() == 2 }, "the second read running")
	close(gate)
	for i, c := range later {
		if <-c.done; c.val != 2 || c.err != nil {
			t.Fatalf("caller %d, which arrived while read 1 ran, got read %d (%v), want 2", i, c.val, c.err)
		}
	}
	if v, err := s.do(context.Background()); v != 3 || err != nil {
		t.Fatalf("a caller after the reads ended got read %d (%v), want a new one, 3", v, err)
	}
	if r, m := reads.Load(), most.Load(); r != 3 || m != 1 {
		t.Fatalf("%d reads, %d at once; want 3, one at a time", r, m)
	}
	s.close()
	if _, err := s.do(context.Background()); err == nil {
		t.Fatal("a call after close succeeded, want an error")
	}
}

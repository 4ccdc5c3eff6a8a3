package orchestrator

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/auditquery"
)

// TestAuditSQLPragmas: a pragma that would change the database, its files
// or the node's process is refused as read-only (403), not answered as a
// busy or broken database (503), while the node writes the file; a pragma
// that reads is answered.
func TestAuditSQLPragmas(t *testing.T) {
	_, base, token := consoleNode(t)
	var cases []apiCase
	for _, q := range []string{
		"PRAGMA journal_mode=DELETE",
		"PRAGMA journal_mode=MEMORY",
		"PRAGMA journal_mode=OFF",
		"PRAGMA journal_mode('truncate')",
		"PRAGMA wal_checkpoint(TRUNCATE)",
		"PRAGMA wal_checkpoint",
		"PRAGMA optimize",
		"PRAGMA temp_store_directory = '.'",
		"PRAGMA hard_heap_limit = 1",
		"EXPLAIN PRAGMA journal_mode = DELETE",
	} {
		cases = append(cases, apiCase{name: q, method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": q},
			status: 403, errType: ErrTypePermission, param: "sql"})
	}
	for _, q := range []string{"PRAGMA journal_mode", "PRAGMA table_info(messages)", "PRAGMA quick_check(1)"} {
		cases = append(cases, apiCase{name: q, method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": q}, status: 200})
	}
	runAPICases(t, base, token, cases)
}

// TestAuditSQLRunsAFewAtOnce: at most MaxAuditSQLRunning statements run
// at once; one more waits for a slot and, when none frees within the
// time bound, is answered 429 with Retry-After; a freed slot serves the
// next.
func TestAuditSQLRunsAFewAtOnce(t *testing.T) {
	var running, most atomic.Int32
	release := make(chan struct{})
	held := func(ctx context.Context, req auditquery.Request) (*auditquery.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if req.SQL == "SELECT 'hold'" {
			<-release // past the waiting statement's bound
		}
		return &auditquery.Result{Columns: []string{"x"}, Rows: [][]any{{1}}}, nil
	}
	_, base, token := startAPI(t, nil, Options{AuditQuery: held, auditTimeout: 2 * time.Second,
		Provider: mustScript(t, `{"name":"c","turns":[{"content":"hi"}]}`)})
	post := func(sql string) *http.Response {
		return send(t, "POST", base+"/v1/audit/sql", token, map[string]any{"sql": sql})
	}
	done := make(chan int, MaxAuditSQLRunning)
	for range MaxAuditSQLRunning {
		go func() {
			resp := post("SELECT 'hold'")
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return running.Load() == MaxAuditSQLRunning }, "the held statements running")
	resp := post("SELECT 1")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), ErrTypeBusy) {
		t.Fatalf("statement with every slot held: %d %q Retry-After %q; want 429 %s with Retry-After", resp.StatusCode, body, resp.Header.Get("Retry-After"), ErrTypeBusy)
	}
	close(release)
	for range MaxAuditSQLRunning {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("held statement answered %d, want 200", code)
		}
	}
	resp = post("SELECT 1")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("statement after the slots freed: %d, want 200", resp.StatusCode)
	}
	if m := most.Load(); m != MaxAuditSQLRunning {
		t.Fatalf("%d statements ran at once, want at most %d (and that many)", m, MaxAuditSQLRunning)
	}
}

// TestAuditSQLStarvedWaitIsBusy: statements that hold every slot for their
// whole time bound (as one too slow for it does) leave a statement sent
// just after them waiting. It is answered 429 and never started, rather
// than started with the few milliseconds its own bound has left when a
// slot frees, only to be stopped and answered 504 as if it had run.
func TestAuditSQLStarvedWaitIsBusy(t *testing.T) {
	const bound = 4 * time.Second // the wait ends 400 ms before the holders do
	var holding atomic.Int32
	var waiterRan atomic.Bool
	slow := func(ctx context.Context, req auditquery.Request) (*auditquery.Result, error) {
		if req.SQL != "SELECT 'slow'" {
			waiterRan.Store(true)
			return &auditquery.Result{Columns: []string{"x"}, Rows: [][]any{{1}}}, nil
		}
		holding.Add(1)
		<-ctx.Done()
		return nil, &auditquery.Error{Kind: auditquery.KindTimeout, Message: "the statement ran past its time bound"}
	}
	_, base, token := startAPI(t, nil, Options{AuditQuery: slow, auditTimeout: bound,
		Provider: mustScript(t, `{"name":"c","turns":[{"content":"hi"}]}`)})
	post := func(sql string) (int, string) {
		resp := send(t, "POST", base+"/v1/audit/sql", token, map[string]any{"sql": sql})
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	done := make(chan int, MaxAuditSQLRunning)
	for range MaxAuditSQLRunning {
		go func() {
			code, _ := post("SELECT 'slow'")
			done <- code
		}()
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return holding.Load() == MaxAuditSQLRunning }, "the slow statements running")
	if code, body := post("SELECT 1"); code != http.StatusTooManyRequests || !strings.Contains(body, ErrTypeBusy) {
		t.Fatalf("statement that waited while every slot was held to its end: %d %s, want 429 %s", code, body, ErrTypeBusy)
	}
	if waiterRan.Load() {
		t.Fatal("the statement that found no slot in time was started")
	}
	for range MaxAuditSQLRunning {
		if code := <-done; code != http.StatusGatewayTimeout {
			t.Fatalf("slow statement answered %d, want 504", code)
		}
	}
}

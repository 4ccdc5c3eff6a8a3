package orchestrator

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

func readyz(t *testing.T, base string) (int, Readiness) {
	t.Helper()
	resp := send(t, "GET", base+"/readyz", "", nil) // no token
	var r Readiness
	decodeBody(t, resp, &r)
	return resp.StatusCode, r
}

func check(r Readiness, name string) ReadyCheck {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return ReadyCheck{Name: name, Reason: "missing"}
}

func TestReadyzBrokerGone(t *testing.T) {
	node, base, _ := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	code, r := readyz(t, base)
	if code != 200 || !r.Ready || len(r.Checks) != 3 {
		t.Fatalf("fresh node: %d %+v", code, r)
	}
	if err := node.broker.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		code, r = readyz(t, base)
		return code == 503 && !check(r, CheckBroker).OK
	}, "readyz notices the broker is gone")

	if c := check(r, CheckBroker); !strings.Contains(c.Reason, "not connected") || !check(r, CheckAudit).OK {
		t.Fatalf("checks %+v", r.Checks)
	}
}

func TestReadyzLLMCooling(t *testing.T) {
	down := failing(&llm.Error{Kind: llm.KindServer, Provider: "down", Status: 503, Message: "model offline"})
	chain, err := resilient.New([]resilient.Link{{Provider: down, Model: "m1"}}, resilient.Options{FailureThreshold: 1, Cooldown: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	node, base, token := startAPI(t, nil, Options{Provider: chain})
	if code, _ := readyz(t, base); code != 200 {
		t.Fatalf("before any failure: %d", code)
	}
	resp := send(t, "POST", base+"/v1/chat/completions", token, completion("x"))
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Fatalf("chat on a failing model: %d", resp.StatusCode)
	}
	code, r := readyz(t, base)
	if c := check(r, CheckLLM); code != 503 || c.OK || !strings.Contains(c.Reason, "cooling down") {
		t.Fatalf("after the model failed: %d %+v", code, r)
	}
	st := node.Status()
	if len(st.LLM.Links) != 1 || st.LLM.Links[0].State != "cooling" || st.LLM.Links[0].Model != "m1" || st.LLM.Links[0].CoolingUntil.IsZero() {
		t.Fatalf("status llm %+v", st.LLM)
	}
}

// TestReadyzDiskFull runs a node on a small tmpfs and fills it: readyz
// says so without writing, chats are refused fast, and once space returns
// the node is ready again at once (no chat needed) and a chat goes
// through.
func TestReadyzDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=24m"); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs here (%v); TestChatCompletionsStatuses covers the refusal through the free-space seam", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })

	// The free-space probe is real until the test pretends there is room,
	// so that a chat reaches the full disk and its write fails.
	var pretend atomic.Bool
	var skew atomic.Int64
	o := Options{Provider: mustScript(t, helloTranscript),
		diskFree: func(p string) (uint64, error) {
			if pretend.Load() {
				return 1 << 40, nil
			}
			return statfsFree(p)
		},
		now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}
	node, base, token := startAPI(t, func(c *Config) { c.DataDir = filepath.Join(dir, "data") }, o)
	if code, r := readyz(t, base); code != 200 {
		t.Fatalf("fresh node on 24 MiB: %d %+v", code, r)
	}
	junk := filepath.Join(dir, "junk")
	fill(t, junk)
	code, r := readyz(t, base)
	if c := check(r, CheckAudit); code != 503 || c.OK || !strings.Contains(c.Reason, "disk nearly full") {
		t.Fatalf("full disk: %d %+v", code, r)
	}
	resp := send(t, "POST", base+"/v1/chat", token, ChatRequest{Text: "x"})
	var f ChatFailure
	decodeBody(t, resp, &f)
	if resp.StatusCode != 503 || !strings.Contains(f.Error.Message, "disk nearly full") {
		t.Fatalf("chat on a full disk: %d %+v", resp.StatusCode, f)
	}

	pretend.Store(true)
	resp = send(t, "POST", base+"/v1/chat", token, ChatRequest{Text: "x"})
	decodeBody(t, resp, &f)
	if resp.StatusCode != 503 || f.Error.Type != ErrTypeNotReady {
		t.Fatalf("chat whose writes fail: %d %+v", resp.StatusCode, f)
	}
	code, r = readyz(t, base)
	if c := check(r, CheckAudit); code != 503 || !strings.Contains(c.Reason, "last audit write failed") {
		t.Fatalf("after a failed write: %d %+v", code, r)
	}
	start := time.Now()
	resp = send(t, "POST", base+"/v1/chat/completions", token, completion("x"))
	var e errorBody
	decodeBody(t, resp, &e)
	if resp.StatusCode != 503 || !strings.Contains(e.Error.Message, "cannot write") || time.Since(start) > 2*time.Second {
		t.Fatalf("chat right after a failed write: %d %+v after %s", resp.StatusCode, e, time.Since(start))
	}

	if err := os.Remove(junk); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(auditRetryAfter + time.Second)) // the refusal window passed
	// Space is back: the node is ready again without a chat (or any
	// write) to prove it; it stayed 503 until one came.
	pretend.Store(false)
	if code, r := readyz(t, base); code != 200 {
		t.Fatalf("space returned, no chat yet: %d %+v", code, r)
	}
	resp = send(t, "POST", base+"/v1/chat", token, ChatRequest{Text: "bob"})
	var c ChatResponse
	decodeBody(t, resp, &c)
	if resp.StatusCode != 200 || c.Text != "hello bob" {
		t.Fatalf("chat after space returned: %d %+v", resp.StatusCode, c)
	}
	if code, r := readyz(t, base); code != 200 {
		t.Fatalf("after a good write: %d %+v", code, r)
	}
	if st := node.Status(); st.AuditWrite.Failing || st.AuditWrite.LastFailure.IsZero() || st.AuditWrite.FreeBytes <= 0 {
		t.Fatalf("status audit_write %+v", st.AuditWrite)
	}
}

// TestAuditReady: the audit check from the writer's last outcome and the
// free space. A write that failed for a full disk stops counting once the
// chat gate's pause has passed and the disk has room again; any other
// failure counts until a write succeeds.
func TestAuditReady(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := now.Add(-time.Hour)
	full := sqlite.WriteHealth{LastOK: ok, LastFailure: now.Add(-auditRetryAfter - time.Second), LastError: "audit database disk is full", DiskFull: true}
	fresh := full
	fresh.LastFailure = now.Add(-auditRetryAfter / 2)
	ioerr := full
	ioerr.DiskFull, ioerr.LastError = false, "disk I/O error"
	room, low := uint64(MinAuditFreeBytes), uint64(MinAuditFreeBytes-1)
	statfsErr := errors.New("statfs: no such file")
	for _, tc := range []struct {
		name   string
		h      sqlite.WriteHealth
		free   uint64
		ferr   error
		ok     bool
		reason string
	}{
		{"healthy", sqlite.WriteHealth{LastOK: ok}, room, nil, true, ""},
		{"healthy, disk low", sqlite.WriteHealth{LastOK: ok}, low, nil, false, "disk nearly full"},
		{"healthy, statfs failed", sqlite.WriteHealth{LastOK: ok}, 0, statfsErr, true, ""},
		{"disk full, room again", full, room, nil, true, ""},
		{"disk full, still low", full, low, nil, false, "last audit write failed"},
		{"disk full, statfs failed", full, 0, statfsErr, false, "last audit write failed"},
		{"disk full, within the pause", fresh, room, nil, false, "last audit write failed"},
		{"I/O error, room", ioerr, room, nil, false, "disk I/O error"},
		{"disk full, then a good write", sqlite.WriteHealth{LastOK: now, LastFailure: full.LastFailure, DiskFull: true}, room, nil, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotOK, reason := auditReady(tc.h, tc.free, tc.ferr, now)
			if gotOK != tc.ok || !strings.Contains(reason, tc.reason) || (tc.ok && reason != "") {
				t.Fatalf("auditReady = %v %q, want %v with %q", gotOK, reason, tc.ok, tc.reason)
			}
		})
	}
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last blocks a page-sized write could not take.
	small := make([]byte, 512)
	for {
		if _, err := f.Write(small); err != nil {
			return
		}
	}
}

// TestReadyzLLMServerNotAnswering starts a node whose [llm] base_url is a
// closed loopback port, as on a Pi whose model server is not up (yet):
// readyz and status say so from the start-up probe on, before any chat.
// Then a real server comes up on that port: the first chat answered by it
// makes the node ready again at once.
func TestReadyzLLMServerNotAnswering(t *testing.T) {
	addr := "127.0.0.1:43151"
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Skipf("port %s is taken: %v", addr, err)
	} else {
		ln.Close() // nothing listens there now
	}
	node, base, token := startAPI(t, func(c *Config) {
		c.LLM = llm.Config{Endpoint: llm.Endpoint{Provider: llm.ProviderOpenAI, BaseURL: "http://" + addr + "/v1", Model: "tiny"}}
	}, Options{})
	var r Readiness
	code := 0
	testenv.Eventually(t, 5*time.Second, func() bool {
		code, r = readyz(t, base)
		return code == 503
	}, "readyz notices the model server does not answer")
	if c := check(r, CheckLLM); c.OK || !strings.Contains(c.Reason, "connection refused") || !strings.Contains(c.Reason, "chats still try it") ||
		!check(r, CheckAudit).OK || !check(r, CheckBroker).OK {
		t.Fatalf("readyz %d %+v", code, r)
	}
	st := node.Status()
	if l := st.LLM.Links; len(l) != 1 || l[0].State != "not_answering" || l[0].NotAnswering != "connection refused" ||
		l[0].NotAnsweringSince.IsZero() || l[0].CheckedAt.Before(l[0].NotAnsweringSince) {
		t.Fatalf("status llm %+v", st.LLM)
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"1","object":"chat.completion","model":"tiny","choices":[{"index":0,"finish_reason":"stop",
		  "message":{"role":"assistant","content":"up now"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	resp := send(t, "POST", base+"/v1/chat/completions", token, completion("hello"))
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat once the server is up: %d", resp.StatusCode)
	}
	if code, r = readyz(t, base); code != 200 || !r.Ready {
		t.Fatalf("after an answered chat: %d %+v", code, r)
	}
	if l := node.Status().LLM.Links; l[0].State != "ok" || l[0].NotAnswering != "" {
		t.Fatalf("status llm after an answer %+v", l)
	}
}

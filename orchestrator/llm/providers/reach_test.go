package providers

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/probe"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
)

// freePort returns a loopback address nothing listens on.
func freePort(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s is taken: %v", addr, err)
	}
	ln.Close()
	return addr
}

// acceptAndClose listens on addr and closes every connection unanswered,
// counting them.
func acceptAndClose(t *testing.T, addr string) (*atomic.Int64, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return &n, func() { ln.Close(); <-done }
}

func link0(p llm.Provider) resilient.Health { return p.(*resilient.Chain).Health()[0] }

// A local model server that is down at start is reported not answering,
// checked again at a backing-off rate, and reported answering once it is
// up, without a chat: the probe's answer is applied then.
func TestWatchReportsServerDownThenUp(t *testing.T) {
	addr := freePort(t, "127.0.0.1:43161")
	var logs testenv.Buffer
	cfg := config(t, "[llm]\nprovider = \"openai\"\nmodel = \"gemma2:2b\"\nprobe_timeout = \"500ms\"\n")
	cfg.BaseURL = "http://" + addr + "/v1"
	p, err := NewWith(cfg, logs.Logger(slog.LevelInfo), Options{Getenv: env(nil), Reprobe: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.(*resilient.Chain).Close()
	testenv.Eventually(t, 5*time.Second, func() bool { return link0(p).NotAnswering == "connection refused" }, "closed port reported")
	since := link0(p).NotAnsweringSince

	// Something listens but never answers: still down, and re-checked at
	// a bounded rate (each probe is up to 3 requests).
	accepts, stop := acceptAndClose(t, addr)
	time.Sleep(1200 * time.Millisecond)
	stop()
	h := link0(p)
	if h.NotAnsweringSince != since || !h.CheckedAt.After(since) || h.NotAnswering == "" {
		t.Fatalf("while down: %+v (since %s)", h, since)
	}
	// Waits 40ms doubling: at most 6 probes in 1.2s; a fixed 40ms would be 30.
	if n := accepts.Load(); n < 2 || n > 18 {
		t.Fatalf("%d connections in 1.2s: the re-checks do not back off", n)
	}

	models := strings.NewReader(`{"object":"list","data":[{"id":"gemma2:2b","object":"model"}]}`)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		models.Seek(0, 0)
		models.WriteTo(w)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !link0(p).NotAnsweringSince.IsZero() {
		if time.Now().After(deadline) {
			t.Fatalf("server up not reported: %+v\n%s", link0(p), logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h := link0(p); h.NotAnswering != "" || !h.CheckedAt.IsZero() {
		t.Fatalf("after the answer: %+v", h)
	}
	if out := logs.String(); strings.Count(out, "capability probe got no answer") != 1 || !strings.Contains(out, "llm server answers") ||
		!strings.Contains(out, "listed=true") {
		t.Fatalf("log:\n%s", out)
	}
}

// A hosted endpoint probed on request (probe = "on") is asked once, as
// before, and never marked by that probe: no request goes to a hosted API
// just for status. Its host name is looked up instead (DNS only), again
// at a backing-off rate until it resolves: a misspelled name shows in
// status before a call fails. A real look-up of a name that cannot exist
// marks the link.
func TestHostedEndpointNameLookedUp(t *testing.T) {
	cfg := config(t, "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nprobe = \"on\"\nprobe_timeout = \"2s\"\n")
	cfg.BaseURL = "https://api.evoclaw-test.invalid/v1"
	var logs testenv.Buffer
	p, err := NewWith(cfg, logs.Logger(slog.LevelDebug), Options{Getenv: env(map[string]string{"OPENAI_API_KEY": "k"}), Reprobe: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.(*resilient.Chain).Close()
	testenv.Eventually(t, 5*time.Second, func() bool {
		return strings.HasPrefix(link0(p).NotAnswering, "host api.evoclaw-test.invalid not ")
	}, "unresolvable host name reported")
	testenv.Eventually(t, 5*time.Second, func() bool { return strings.Contains(logs.String(), "capability probe got no answer") }, "probe ran")
	if strings.Contains(logs.String(), "still not answering") {
		t.Fatalf("hosted endpoint probed again:\n%s", logs.String())
	}

	notFound := &net.DNSError{Err: "no such host", Name: "api.example.test", IsNotFound: true}
	proxied := &http.Client{Transport: &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("http://127.0.0.1:43164") }}}
	for _, tc := range []struct {
		name    string
		baseURL string
		client  *http.Client
		lookups int64 // look-ups made: the first fails, the others resolve
	}{
		{"name", "https://api.example.test/v1", nil, 2},
		{"address", "https://203.0.113.7/v1", nil, 0},
		{"through a proxy", "https://api.example.test/v1", proxied, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			lookup := func(ctx context.Context, host string) ([]string, error) {
				if n.Add(1) == 1 {
					return nil, notFound
				}
				return []string{"203.0.113.7"}, nil
			}
			cfg := config(t, "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\n")
			cfg.BaseURL = tc.baseURL
			p, err := NewWith(cfg, nil, Options{Getenv: env(nil), Reprobe: 20 * time.Millisecond, Lookup: lookup, Client: tc.client})
			if err != nil {
				t.Fatal(err)
			}
			if tc.lookups > 0 {
				testenv.Eventually(t, 5*time.Second, func() bool { return n.Load() >= tc.lookups }, "look-ups")
			}
			p.(*resilient.Chain).Close()
			if h := link0(p); n.Load() != tc.lookups || h.NotAnswering != "" || !h.NotAnsweringSince.IsZero() {
				t.Fatalf("%d look-ups, link %+v", n.Load(), h)
			}
		})
	}
}

// notAnswering tells "nobody there" from an answer, on real failures.
func TestNotAnsweringCauses(t *testing.T) {
	closed := freePort(t, "127.0.0.1:43162")
	_, stop := acceptAndClose(t, "127.0.0.1:43163")
	defer stop()
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	for _, tc := range []struct {
		name, base string
		cause      string // "" for an answer, "*" for any
	}{
		{"closed port", "http://" + closed + "/v1", "connection refused"},
		{"no HTTP", "http://127.0.0.1:43163/v1", "*"}, // EOF, reset or closed idle: the transport's words vary
		{"silent", silent.URL + "/v1", "no answer within probe_timeout 200ms"},
		{"404", notFound.URL + "/v1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := probe.Probe(ctx, probe.Options{BaseURL: tc.base, Model: "m"})
			if err == nil {
				t.Fatal("probe answered")
			}
			cause, down := notAnswering(err, 200*time.Millisecond)
			if (cause != tc.cause && (tc.cause != "*" || cause == "")) || down != (tc.cause != "") {
				t.Fatalf("notAnswering(%v) = %q, %v; want %q", err, cause, down, tc.cause)
			}
		})
	}
	if _, down := notAnswering(nil, time.Second); down {
		t.Fatal("nil error is down")
	}
}

// modelServer serves /v1/models and /v1/chat/completions on ln.
func modelServer(ln net.Listener) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/models":
			w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
		case "/v1/chat/completions":
			w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	return srv
}

// A local model server that answered at start and then went away is
// checked again in the background once a call finds nobody there: the
// link is not_answering, as for a server down at start, and is back by
// itself when the server answers a check, its cool-down (caused by nobody
// answering) over. Before, only the calls' failures showed (failing, then
// cooling for the whole cool-down), and nothing checked it again.
func TestServerThatDiesIsCheckedAgain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := modelServer(ln)
	var logs testenv.Buffer
	cfg := config(t, "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nprobe_timeout = \"500ms\"\nretries = 0\nfailure_threshold = 1\ncooldown = \"1h\"\n")
	cfg.BaseURL = "http://" + addr + "/v1"
	p, err := NewWith(cfg, logs.Logger(slog.LevelInfo), Options{Getenv: env(nil), Reprobe: 40 * time.Millisecond})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer p.(*resilient.Chain).Close()
	testenv.Eventually(t, 5*time.Second, func() bool { return strings.Contains(logs.String(), "llm capabilities") }, "the probe at start")
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "ping"}}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}

	srv.Close()
	if _, err := p.Complete(context.Background(), req); llm.KindOf(err) != llm.KindNetwork {
		t.Fatalf("call to a server gone: %v, want a network error", err)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return link0(p).NotAnswering == "connection refused" }, "the server gone reported")
	if h := link0(p); h.CoolingUntil.IsZero() {
		t.Fatalf("link %+v: want it cooling after failure_threshold failures", h)
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	srv = modelServer(ln)
	defer srv.Close()
	testenv.Eventually(t, 5*time.Second, func() bool {
		h := link0(p)
		return h.NotAnsweringSince.IsZero() && h.CoolingUntil.IsZero()
	}, "the server back reported without a call")
	out := logs.String()
	if strings.Count(out, "llm server stopped answering") != 1 || strings.Contains(out, "capability probe got no answer") ||
		!strings.Contains(out, "llm server answers") {
		t.Fatalf("log:\n%s", out)
	}
}

// A hosted API whose calls find nobody answering gets no request just for
// status: its host name is looked up again, and nothing else.
func TestHostedServerGoneOnlyLookedUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String() // where the "hosted API" is not answering
	ln.Close()
	var dials, lookups atomic.Int64
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, closed)
	}}}
	lookup := func(ctx context.Context, host string) ([]string, error) {
		lookups.Add(1)
		return []string{"203.0.113.7"}, nil
	}
	cfg := config(t, "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nretries = 0\n")
	cfg.BaseURL = "https://api.example.test/v1"
	p, err := NewWith(cfg, nil, Options{Getenv: env(map[string]string{"OPENAI_API_KEY": "k"}), Reprobe: 20 * time.Millisecond, Lookup: lookup, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	defer p.(*resilient.Chain).Close()
	testenv.Eventually(t, 5*time.Second, func() bool { return lookups.Load() == 1 }, "the look-up at start")
	_, err = p.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "ping"}}})
	if llm.KindOf(err) != llm.KindNetwork {
		t.Fatalf("call: %v, want a network error", err)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return lookups.Load() == 2 }, "the look-up after the failed call")
	p.(*resilient.Chain).Close()
	if h := link0(p); dials.Load() != 1 || lookups.Load() != 2 || h.NotAnswering != "" {
		t.Fatalf("%d connections (want the call's 1), %d look-ups (want 2), link %+v", dials.Load(), lookups.Load(), h)
	}
}

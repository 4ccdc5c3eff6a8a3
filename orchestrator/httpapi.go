package orchestrator

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/orchestrator/internal/console"
	"github.com/evoclaw/evoclaw/persistence/hot"
)

// Defaults of the HTTP API.
const (
	// DefaultHTTPListen is where `evoclaw serve` listens when [http] listen
	// is not set ("off" turns the API off).
	DefaultHTTPListen = "127.0.0.1:8787"
	// HTTPTokenFile holds the API's bearer token in the data directory
	// when [http] token_env is not set; only the node's user can read it.
	HTTPTokenFile = "http-token"
	// HTTPAddrFile holds the API's base URL (http://host:port) in the data
	// directory while the node runs, so that local clients (`evoclaw chat`,
	// `evoclaw status`) find it from --data-dir alone.
	HTTPAddrFile = "http-addr"
	// maxLogsWait bounds a long-polling /v1/logs request.
	maxLogsWait = 60 * time.Second
	// maxChatBody bounds a /v1/chat request body.
	maxChatBody = 1 << 20
)

// HTTPConf is the [http] section: the node's own API for operators and
// live views (health, status, the hot tier of the audit trail, chat).
type HTTPConf struct {
	// Listen is host:port; empty means off (for `evoclaw serve`:
	// DefaultHTTPListen), "off" means off.
	Listen string `toml:"listen"`
	// TokenEnv names the environment variable with the bearer token every
	// /v1 request must carry; required on a non-loopback address. Empty:
	// a random token in {data_dir}/http-token (mode 0600).
	TokenEnv string `toml:"token_env"`
}

// ErrHTTPExposed refuses an API on the network without a configured token.
var ErrHTTPExposed = errors.New("http api exposed to the network without [http] token_env")

// enabled reports whether the API runs.
func (c HTTPConf) enabled() bool { return c.Listen != "" && c.Listen != "off" }

// httpAPI serves the node's API; Close stops it and waits.
type httpAPI struct {
	srv   *http.Server
	ln    net.Listener
	done  chan struct{}
	token string
	// failed counts the wrong tokens each client address sent
	// (authFailures); loopback clients are not counted.
	failed *rate.Keyed
	now    func() time.Time // time.Now; a test's clock
	// stop ends every request's context, so long polls end at close.
	stop context.CancelFunc
}

// startHTTP listens and serves until closed.
func (n *Node) startHTTP() error {
	c := n.cfg.HTTP
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("http.listen %q: %w", c.Listen, err)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	var token string
	switch {
	case c.TokenEnv != "":
		if token = os.Getenv(c.TokenEnv); len(token) < 16 {
			return fmt.Errorf("http.token_env: %s must hold a token of at least 16 characters", c.TokenEnv)
		}
	case !loopback:
		return fmt.Errorf("%w: http.listen %q is not a loopback address, and the API runs chats with the node's tools: "+
			"set [http] token_env to the name of an environment variable holding a token of at least 16 characters "+
			"(clients send it as \"Authorization: Bearer TOKEN\"), or listen on 127.0.0.1", ErrHTTPExposed, c.Listen)
	default:
		if token, err = writeTokenFile(filepath.Join(n.cfg.DataDir, HTTPTokenFile)); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("http api: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(n.cfg.DataDir, HTTPAddrFile), []byte(apiURL(ln.Addr())+"\n"), 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("write http address: %w", err)
	}
	api := &httpAPI{ln: ln, done: make(chan struct{}), token: token, failed: newAuthFailures(), now: time.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", n.handleReady)
	mux.HandleFunc("GET /v1/status", api.auth(n.handleStatus))
	mux.HandleFunc("GET /v1/logs", api.auth(n.handleLogs))
	mux.HandleFunc("POST /v1/chat", api.auth(n.handleChat))
	mux.HandleFunc("POST /v1/chat/questions/{id}", api.auth(n.handleAnswer))
	mux.HandleFunc("GET /v1/models", api.auth(n.handleModels))
	// An id may hold slashes ("openai/gpt-4o"): one the Python client
	// asks for unescaped is still an unknown model, not an unknown path.
	mux.HandleFunc("GET /v1/models/{model...}", api.auth(n.handleModel))
	mux.HandleFunc("POST /v1/chat/completions", api.auth(n.handleChatCompletions))
	// Built on first use, as the console below: neither is needed to
	// answer /healthz, and a node that is never scraped or browsed never
	// builds them.
	mux.HandleFunc("GET /metrics", api.auth(lazyHandler(n.metricsHandler)))
	mux.HandleFunc("GET /v1/jobs", api.auth(n.handleJobs))
	mux.HandleFunc("POST /v1/jobs", api.auth(n.handleAddJob))
	mux.HandleFunc("GET /v1/jobs/{id}", api.auth(n.handleJob))
	mux.HandleFunc("DELETE /v1/jobs/{id}", api.auth(n.handleRemoveJob))
	mux.HandleFunc("POST /v1/jobs/{id}/pause", api.auth(n.handlePauseJob(true)))
	mux.HandleFunc("POST /v1/jobs/{id}/resume", api.auth(n.handlePauseJob(false)))
	mux.HandleFunc("POST /v1/jobs/{id}/run", api.auth(n.handleRunJob))
	mux.HandleFunc("GET /v1/runs", api.auth(n.handleRuns))
	mux.HandleFunc("GET /v1/approvals", api.auth(n.handleApprovals))
	mux.HandleFunc("GET /v1/approvals/{id}", api.auth(n.handleApproval))
	mux.HandleFunc("POST /v1/approvals/{id}/approve", api.auth(n.handleDecide(true)))
	mux.HandleFunc("POST /v1/approvals/{id}/deny", api.auth(n.handleDecide(false)))
	mux.HandleFunc("GET /v1/agents", api.auth(n.handleAgents))
	mux.HandleFunc("GET /v1/conversations", api.auth(n.handleConversations))
	mux.HandleFunc("GET /v1/conversations/{id}/messages", api.auth(n.handleMessages))
	mux.HandleFunc("POST /v1/audit/sql", api.auth(n.handleAuditSQL))
	mux.HandleFunc("GET /v1/audit/reports", api.auth(n.handleAuditReports))
	mux.HandleFunc("GET /v1/audit/status", api.auth(n.handleAuditStatus))
	mux.HandleFunc("GET /v1/audit/verify", api.auth(n.handleVerify))
	mux.HandleFunc("POST /v1/audit/verify", api.auth(n.handleVerify))
	// The web console: static files without the token (they hold no
	// data); every /v1 call the page makes carries it.
	ui := lazyHandler(func() http.Handler { return console.New() })
	mux.Handle("GET /{$}", ui)
	mux.Handle("GET "+console.Prefix, ui)
	// The catch-all matches every method, so the mux never answers 405
	// itself: a known path asked with a wrong method is found here by
	// asking the mux which methods it would route elsewhere.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
			if m == r.Method {
				continue
			}
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeAPIError(w, http.StatusMethodNotAllowed, ErrTypeInvalidRequest, fmt.Sprintf("%s %s: method not allowed (allowed: %s; see docs/API.md)",
				r.Method, echo(r.URL.Path), strings.Join(allow, ", ")))
			return
		}
		httpError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s (see docs/API.md)", r.Method, echo(r.URL.Path)))
	})
	base, stop := context.WithCancelCause(context.Background())
	api.stop = func() { stop(ErrNodeStopping) }
	limits := n.httpLimits.withDefaults()
	api.srv = &http.Server{Handler: refuseUncleanPaths(mux), BaseContext: func(net.Listener) context.Context { return base }}
	bounded := limits.apply(api.srv, ln)
	go func() {
		defer close(api.done)
		if err := api.srv.Serve(bounded); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http api stopped", "err", err)
		}
	}()
	n.http = api
	n.log.Info("http api listening", "addr", ln.Addr().String())
	return nil
}

// close stops the server, waiting for requests in flight (at most 5 s).
func (a *httpAPI) close() error {
	a.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	<-a.done
	return err
}

// writeTokenFile returns the token in path, creating it (0600) if absent.
func writeTokenFile(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("http token: %w", err)
	}
	token := hex.EncodeToString(buf)
	if err := writeFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write http token: %w", err)
	}
	return token, nil
}

// refuseUncleanPaths answers 404, with the API's error body, a path that
// is not in its clean form (a doubled slash, a "." or ".." segment), and
// naming the clean one; h serves the others. http.ServeMux answered such a
// path with a 307 redirect to the clean one and an HTML body, before the
// token was looked at: a POST to //v1/chat/completions (a base URL ending
// in "/" joined with a path) got an empty 307 its client did not follow.
func refuseUncleanPaths(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if clean := cleanPath(p); p != "" && r.Method != http.MethodConnect && clean != p {
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s: the path has an empty, \".\" or \"..\" segment (the clean path is %s; see docs/API.md)",
				r.Method, echo(p), echo(clean)))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// cleanPath is p as http.ServeMux routes it: rooted, without empty, "."
// or ".." segments, a trailing slash kept.
func cleanPath(p string) string {
	clean := path.Clean("/" + strings.TrimPrefix(p, "/"))
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean
}

// lazyHandler serves with the handler build makes on the first request.
func lazyHandler(build func() http.Handler) http.HandlerFunc {
	h := sync.OnceValue(build)
	return func(w http.ResponseWriter, r *http.Request) { h().ServeHTTP(w, r) }
}

// writeFileAtomic replaces path with data: a reader sees the old file or
// the new one, never a part. A file that holds data already is left as it
// is: replacing it frees the old file's blocks, which took a restart 1-2
// ms on a file system mounted with discard (docs/PERFORMANCE.md), for an
// API address that had not changed.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// apiURL is the base URL a local client uses for the listener at addr: a
// wildcard address is reached over loopback.
func apiURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Bounds on guessing the token: each client address past loopback may
// send authFailureBurst wrong tokens, then one per authFailureEvery; past
// that its requests are answered 429 without a look at their token, the
// right one included, until it has room again. A generated token (192
// bits) needs none of this; a token of token_env, which may be as short
// as 16 characters, does. Loopback is not counted: a local client with a
// stale token retrying in a loop would otherwise lock every local client
// (evoclaw chat, the console) out, and whoever runs on the machine has
// other ways in.
const (
	authFailureBurst = 30
	authFailureEvery = time.Second
	// authFailureAddrs bounds the addresses tracked: past it, an address
	// not tracked is counted only once a tracked one has its full budget
	// back.
	authFailureAddrs = 4096
)

func newAuthFailures() *rate.Keyed {
	return rate.NewKeyed(float64(time.Second)/float64(authFailureEvery), authFailureBurst, authFailureAddrs)
}

// auth requires the bearer token. The scheme is case-insensitive (RFC 7235:
// "bearer" is "Bearer"); the token is compared in constant time; an
// address that sent too many wrong ones is refused first (authFailureBurst).
func (a *httpAPI) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := rate.AddressKey(r.RemoteAddr)
		if ip, err := netip.ParseAddrPort(r.RemoteAddr); err != nil || ip.Addr().Unmap().IsLoopback() {
			key = ""
		}
		var now time.Time
		if key != "" && a.failed != nil {
			now = a.now()
		}
		if !now.IsZero() && !a.failed.Has(key, now) {
			w.Header().Set("Retry-After", strconv.Itoa(int(max(authFailureEvery/time.Second, 1))))
			w.Header().Set("Connection", "close")
			writeAPIError(w, http.StatusTooManyRequests, ErrTypeBusy,
				"too many wrong bearer tokens from this address: wait and retry with the right one")
			return
		}
		if len(r.Header.Values("Authorization")) > 1 {
			// Which one counts is each server's guess (the first here, the
			// last at a proxy): the first alone was checked, the others
			// were ignored without a word.
			w.Header().Set("Connection", "close")
			writeAPIError(w, http.StatusBadRequest, ErrTypeInvalidRequest,
				"more than one Authorization header: send one, \"Authorization: Bearer TOKEN\"")
			return
		}
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		got = strings.TrimLeft(got, " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
			if !now.IsZero() {
				a.failed.Allow(key, now)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="evoclaw"`)
			// Nothing of the request is read: close rather than wait to
			// discard a body that may never come.
			w.Header().Set("Connection", "close")
			code := CodeInvalidAPIKey
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: APIError{Type: ErrTypeAuth, Code: &code,
				Message: "missing or wrong bearer token: send \"Authorization: Bearer TOKEN\" with the token of [http] token_env or DATA_DIR/" + HTTPTokenFile}})
			return
		}
		// A query that does not parse lost its malformed pairs without a
		// word (r.URL.Query drops them): ?limit=%zz answered 200 with the
		// default limit, as if the client had not asked for one.
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			writeAPIError(w, http.StatusBadRequest, ErrTypeInvalidRequest, "query: "+echo(err.Error()))
			return
		}
		h(w, r)
	}
}

// httpError answers with code and the API's error body, typed by code.
func httpError(w http.ResponseWriter, code int, msg string) {
	writeAPIError(w, code, errorTypeFor(code), msg)
}

// refuseRequest answers 400 with err, naming the field a *fieldError names.
func refuseRequest(w http.ResponseWriter, err error) {
	writeAPIErrorParam(w, http.StatusBadRequest, errParam(err), err.Error())
}

// badLimit answers 400 for a limit parameter outside 1..most.
func badLimit(w http.ResponseWriter, most int) {
	writeAPIErrorParam(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit: want a number from 1 to %d", most))
}

// writeJSON answers code and v as JSON. An answer over smallAnswer that
// the answer budget may refuse (answerBudget) and finds no room in it is
// answered 429 instead, at once: waiting would hold it in memory as well.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "encode answer: "+err.Error())
		return
	}
	if budget := answerBudget(w); budget != nil && len(b) > smallAnswer {
		n := int64(len(b))
		if !budget.tryAcquire(n) {
			b = nil
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusTooManyRequests, errorBody{Error: APIError{Type: ErrTypeBusy, Message: fmt.Sprintf(
				"busy: the node is sending %d MiB of other answers to clients that have not read them yet, its bound, and this one has %d bytes: retry",
				budget.most>>20, n)}})
			return
		}
		defer budget.release(n)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	// The client may be gone; nothing to do.
	if _, err := w.Write(b); err == nil {
		_, _ = w.Write([]byte{'\n'})
	}
}

// LogsPage is what GET /v1/logs answers: entries oldest first, and the Seq
// to ask after next time (the newest the ring held, matching or not, so
// that a filtered long poll is not woken again by what it skipped).
type LogsPage struct {
	Entries []hot.Entry `json:"entries"`
	Head    int64       `json:"head"`
}

// handleLogs serves the hot tier: ?after=SEQ&kind=tool&agent=ID&limit=N,
// and with wait=30s it holds the request until something newer that
// matches arrives.
func (n *Node) handleLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after int64 = -1 << 63
	if v := q.Get("after"); v != "" {
		var err error
		if after, err = strconv.ParseInt(v, 10, 64); err != nil {
			writeAPIErrorParam(w, http.StatusBadRequest, "after", "after: want an integer")
			return
		}
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 0 {
			writeAPIErrorParam(w, http.StatusBadRequest, "limit", "limit: want a number >= 0")
			return
		}
	}
	f := hot.Filter{Kind: q.Get("kind"), AgentID: q.Get("agent")}
	switch f.Kind {
	case "", hot.KindTool, hot.KindLLM, hot.KindMessage, hot.KindEvent:
	default:
		writeAPIErrorParam(w, http.StatusBadRequest, "kind", "kind: want tool, llm, message or event")
		return
	}
	var page LogsPage
	page.Entries, page.Head = n.tiers.Ring.Page(after, f, limit)
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			writeAPIErrorParam(w, http.StatusBadRequest, "wait", "wait: want a duration such as 30s")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), min(d, maxLogsWait))
		// Until an entry that matches arrives (the ones up to page.Head
		// were looked at): a filtered poll woken by one that does not (a
		// tool feed on a node busy with messages) once answered empty at
		// once, and its client asked again at once, a request per record.
		for len(page.Entries) == 0 && n.tiers.Ring.Wait(ctx, page.Head) == nil {
			page.Entries, page.Head = n.tiers.Ring.Page(page.Head, f, limit)
		}
		cancel() // a timeout answers with no entries
	}
	if page.Entries == nil {
		page.Entries = []hot.Entry{}
	}
	writeJSON(w, http.StatusOK, page)
}

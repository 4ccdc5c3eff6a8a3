// Package mcptools offers the tools of MCP servers as ordinary evoclaw
// tools: each becomes a skills.GoTool named {server}__{tool}, listed with
// the server's own JSON Schema and run by calling the server. Servers are
// reached over stdio (a child process) or streamable HTTP, through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Configuration, in agent.toml or evoclaw.toml:
//
//	[tools.mcp_servers.files]
//	command = "mcp-server-files"
//	args = ["--root", "/srv/data"]
//
//	[tools.mcp_servers.remote]
//	url = "http://127.0.0.1:3000/mcp"
//
// # Concurrency
//
// A Set is safe for concurrent use; Close ends every session and waits for
// stdio servers to exit, for the background restarts of servers without
// a session (retry.go) and for the listings that a server's
// notifications/tools/list_changed caused (relist.go) to end.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package mcptools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Defaults of ServerConfig.
const (
	// DefaultTimeout bounds one tool call.
	DefaultTimeout = 30 * time.Second
	// DefaultConnectTimeout bounds starting a server and listing its tools.
	DefaultConnectTimeout = 15 * time.Second
	// DefaultStopGrace is how long Close gives a stdio server to exit after
	// its standard input is closed before sending SIGTERM (then SIGKILL).
	// Some servers (the official "everything" server) only stop on a signal.
	DefaultStopGrace = 2 * time.Second
	// DefaultWriteStall bounds how long a stdio server may leave its
	// input unread while evoclaw writes to it; then it is killed (ErrStalled).
	DefaultWriteStall = 5 * time.Second
)

// Bounds on what one server may list. A server is outside evoclaw's
// control, and every tool it lists is kept in memory and sent to the model
// with every request.
const (
	// MaxTools is the most tools one server may list; a server listing
	// more is left out.
	MaxTools = 512
	// MaxToolBytes bounds one tool's definition (name, description and
	// input schema as JSON); a larger tool is reported and left out.
	MaxToolBytes = 64 << 10
	// MaxListBytes bounds the definitions of all the tools one server
	// offers; a server listing more is left out.
	MaxListBytes = 2 << 20
)

// ErrStalled means a stdio server did not read its input for
// DefaultWriteStall while evoclaw wrote to it, and was killed.
var ErrStalled = errors.New("mcp server stalled")

// ErrListTooLarge means a server listed more tools, or larger ones in all,
// than evoclaw keeps (MaxTools, MaxListBytes).
var ErrListTooLarge = errors.New("tool list too large")

// Separator joins server and tool names.
const Separator = "__"

// ServerConfig is one [tools.mcp_servers.NAME] table. Exactly one of
// Command and URL is set.
type ServerConfig struct {
	// Command starts a stdio server; Args are its arguments.
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
	// Env is added to a stdio server's environment ("KEY=value").
	Env []string `toml:"env"`
	// URL is a streamable HTTP endpoint.
	URL string `toml:"url"`
	// Permissions are required of every tool of the server.
	Permissions []string `toml:"permissions"`
	// TimeoutMS bounds one call; zero means DefaultTimeout.
	TimeoutMS int64 `toml:"timeout_ms"`
}

// ValidateServers returns a problem for each server whose name cannot
// prefix its tools' names (checkServerName) or that does not set exactly
// one of command and url, naming its key under prefix
// ("tools.mcp_servers").
func ValidateServers(prefix string, servers map[string]ServerConfig) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if err := checkServerName(name); err != nil {
			errs = append(errs, fmt.Errorf("%s.%q: %w", prefix, name, err))
		}
		if m := servers[name]; (m.Command == "") == (m.URL == "") {
			errs = append(errs, fmt.Errorf("%s.%s: set exactly one of command and url", prefix, name))
		}
	}
	return errs
}

// checkServerName refuses a server name that would make its tools' names,
// SERVER__TOOL, ambiguous: one holding the separator, or ending with '_'.
// The first "__" of a tool's name ends the name of its server, so server
// "a_" with tool "x" and server "a" with tool "_x" would both offer
// "a___x", one hiding the other, and the tools of "pi_" would be taken
// for those of "pi" (an agent's, on an orchestrator: withheld).
func checkServerName(name string) error {
	if name == "" || strings.Contains(name, Separator) || strings.HasSuffix(name, "_") {
		return fmt.Errorf("a server name must be non-empty, must not contain %q and must not end with '_'", Separator)
	}
	return nil
}

// Set is the connected MCP servers.
type Set struct {
	log *slog.Logger

	mu       sync.Mutex // guards sessions
	sessions map[string]*server
}

// server is one connected MCP server. A server without a session (its
// first start or a restart failed, or its session ended: it exited,
// broke a bound, stalled) is started again in the background (retry.go)
// or by the next call, whichever comes first, at most once per backoff,
// and its tools listed again. A session that ends while the next restart
// waits for its backoff (the server crashed soon after a restart)
// withdraws the server's tools, since no call could reach them.
type server struct {
	name    string
	cfg     ServerConfig
	groups  *groupFile
	changed func(server string, tools []skills.GoTool, errs []error) // Options.Changed; may be nil
	log     *slog.Logger

	// The bounds of the backoff: RestartBackoffMin and RestartBackoffMax
	// but in tests.
	backoffMin, backoffMax time.Duration

	toolsMu sync.Mutex // guards tools and skipped
	tools   []*mcp.Tool
	skipped []error // tools listed but left out, reported by Tools

	now   func() time.Time                     // time.Now; a test's clock
	after func(time.Duration) <-chan time.Time // time.After; a test's, that may never fire

	mu      sync.Mutex                 // guards what follows; held while a session starts
	session *mcp.ClientSession         // nil once closed after it ended, until restarted
	words   func(time.Duration) string // of session: how its stdio server ended (dial)
	ended   chan struct{}              // closed when session's connection ends
	started time.Time                  // of session
	endedAt time.Time                  // when session ended, once sessionEnded saw it; else zero
	settled bool                       // settle counted session as one that ran long
	retryAt time.Time                  // no restart before
	backoff time.Duration              // the wait after the next restart
	closed  bool                       // by Set.Close: no restart
	stop    context.CancelFunc
	stopped context.Context // ends at Set.Close: a start in progress stops

	retrying bool           // a background retry runs (retry.go)
	down     bool           // it went down and has had no session of RestartBackoffMax since: logged once
	tries    int            // starts that failed, and sessions that ended soon, since it went down
	backSaid int            // tries when "offers its tools again" was last logged
	retries  sync.WaitGroup // the background retry, which Set.Close waits for

	lastChange time.Time // of the last listing after a notification that changed its tools (relist.go)
	changes    int       // such listings since the last quiet RestartBackoffMax

	relistEvery time.Duration // RelistInterval but in tests

	relistMu      sync.Mutex     // guards what follows (relist.go); taken after mu, never before
	relisting     bool           // the listing goroutine runs
	relistPending bool           // a notification came since the last listing began
	relistClosed  bool           // by Set.Close: no listing goroutine starts
	lastRelist    time.Time      // when the last listing began
	notices       int            // notifications/tools/list_changed received
	relistings    int            // listings they caused
	relists       sync.WaitGroup // the listing goroutine, which Set.Close waits for
}

// Restarts of a server whose session ended: the first at once, then after
// 1 s, doubling to RestartBackoffMax; a session that lasted
// RestartBackoffMax starts the count again. A server whose first start
// failed is tried again after RestartBackoffMin, then doubling.
const (
	RestartBackoffMin = time.Second
	RestartBackoffMax = time.Minute
)

// ErrServerDown means a server's session ended and its restart failed or
// waits for its backoff.
var ErrServerDown = errors.New("mcp server is down")

// Options are what ConnectWith takes beside the servers. The zero value
// is ready for use.
type Options struct {
	// Log receives what goes wrong that is not a server's error; nil
	// discards it.
	Log *slog.Logger
	// GroupFile, when set, is where the process groups of the running
	// stdio servers are recorded, so that what the servers of a killed
	// agent started is killed at its next start: ConnectWith kills what
	// the groups recorded there still hold before it starts a server.
	// Empty: no record, and what a killed agent's servers started runs on.
	// One Set at a time uses a file: a second would kill the first's.
	GroupFile string
	// Changed, when set, is called when the tools a server offers change:
	// its restart, or the listing after it said its tools changed, listed
	// other tools (added, removed, another schema), or refused its
	// listing, and then it offers none, or a background restart of a
	// server that offered none listed some. tools and errs are what Tools
	// returns for that server alone; the errs are logged by this package,
	// within the bound of its lines on changes (noteChange), so Changed
	// should not log each: a server may change its tools every second and
	// list hundreds it cannot offer each time. It runs on the goroutine of the call
	// that restarted the server, which waits for it, on the server's
	// background retry or on its listing goroutine; one server's calls
	// come one at a time, in the order of its listings, never once Close
	// returned. It must not call the Set.
	Changed func(server string, tools []skills.GoTool, errs []error)

	// backoffMin and backoffMax replace RestartBackoffMin and
	// RestartBackoffMax when set, relistEvery RelistInterval: tests.
	backoffMin, backoffMax time.Duration
	relistEvery            time.Duration
}

// Connect is ConnectWith with only a log, which may be nil.
func Connect(ctx context.Context, servers map[string]ServerConfig, log *slog.Logger) (*Set, []error) {
	return ConnectWith(ctx, servers, Options{Log: log})
}

// ConnectWith connects to every configured server and lists its tools, all
// servers at once, so that servers slow to answer delay the caller by one
// DefaultConnectTimeout, not one each. A server that fails is reported in
// the errors, in name order: one whose configuration is wrong is left
// out, one whose start or listing failed offers no tools and is started
// again in the background until it lists them (or Close), and then
// offers them through Options.Changed.
func ConnectWith(ctx context.Context, servers map[string]ServerConfig, o Options) (*Set, []error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var groups *groupFile
	if o.GroupFile != "" {
		groups = openGroups(o.GroupFile, log)
	}
	names := slices.Sorted(maps.Keys(servers))
	srvs := make([]*server, len(names))
	failed := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { srvs[i], failed[i] = connect(ctx, name, servers[name], groups, o, log) })
	}
	wg.Wait()
	s := &Set{log: log, sessions: map[string]*server{}}
	var errs []error
	for i, name := range names {
		if failed[i] != nil {
			errs = append(errs, fmt.Errorf("mcp server %q: %w", name, failed[i]))
		}
		if srvs[i] != nil {
			s.sessions[name] = srvs[i]
		}
	}
	return s, errs
}

// connect starts the server and lists its tools. A server whose
// configuration is wrong is nil; one whose start or listing failed is
// returned with the error, offering no tools, and retried in the
// background.
func connect(ctx context.Context, name string, cfg ServerConfig, groups *groupFile, o Options, log *slog.Logger) (*server, error) {
	if err := checkServerName(name); err != nil {
		return nil, err
	}
	if cfg.Command != "" && cfg.URL != "" {
		return nil, errors.New("set command or url, not both")
	}
	if cfg.Command == "" && cfg.URL == "" {
		return nil, errors.New("neither command nor url is set")
	}
	cctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	defer cancel()
	srv := &server{name: name, cfg: cfg, groups: groups, changed: o.Changed, now: time.Now, after: time.After,
		log: log.With("server", name), backoffMin: RestartBackoffMin, backoffMax: RestartBackoffMax}
	if o.backoffMin > 0 {
		srv.backoffMin, srv.backoffMax = o.backoffMin, max(o.backoffMax, o.backoffMin)
	}
	srv.relistEvery = RelistInterval
	if o.relistEvery > 0 {
		srv.relistEvery = o.relistEvery
	}
	srv.stopped, srv.stop = context.WithCancel(context.Background())
	// Held as a restart holds it: a listing that the server's
	// notification causes waits for this one (relist.go).
	srv.mu.Lock()
	session, words, err := srv.dial(cctx)
	if err != nil {
		srv.mu.Unlock()
		return srv, srv.failedStart(fmt.Errorf("connect: %w", err))
	}
	tools, skipped, err := srv.list(cctx, session)
	if err != nil {
		session.Close()
		srv.mu.Unlock()
		return srv, srv.failedStart(fmt.Errorf("list tools: %w", err))
	}
	defer srv.mu.Unlock()
	srv.use(session, words)
	srv.tools, srv.skipped = tools, skipped
	return srv, nil
}

// dial starts the server (stdio) or reaches it (HTTP) and initialises a
// session. words says, once a stdio server has ended, how it ended and
// what its standard error ended with; a start that failed as the server
// ended says so.
func (srv *server) dial(ctx context.Context) (session *mcp.ClientSession, words func(time.Duration) string, err error) {
	var t mcp.Transport
	words = func(time.Duration) string { return "" }
	if srv.cfg.Command != "" {
		cmd := exec.Command(srv.cfg.Command, srv.cfg.Args...)
		cmd.Env = append(slices.Clone(srv.cfg.Env), "PATH="+envPath())
		st := &stdioTransport{cmd: cmd, grace: DefaultStopGrace, stall: DefaultWriteStall, groups: srv.groups, log: srv.log}
		t, words = st, st.lastWords
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: srv.cfg.URL, DisableStandaloneSSE: true, HTTPClient: httpClient}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "evoclaw", Version: "1"},
		&mcp.ClientOptions{ToolListChangedHandler: srv.listChanged})
	session, err = client.Connect(ctx, t, nil)
	if err != nil && ctx.Err() == nil { // else it was stopped for being slow
		if w := words(0); w != "" { // the SDK closed it, which waits for its exit
			err = fmt.Errorf("%w (%s)", err, w)
		}
	}
	return session, words, err
}

// use makes session the server's, and notes when its connection ends
// (sessionEnded). srv.mu is held.
func (srv *server) use(session *mcp.ClientSession, words func(time.Duration) string) {
	ended := make(chan struct{})
	srv.session, srv.words, srv.ended, srv.started, srv.endedAt, srv.settled = session, words, ended, srv.now(), time.Time{}, false
	go func() {
		_ = session.Wait()
		close(ended)
		note := words(endWait) // a crashed server has exited by now, or nearly
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if srv.session == session && !srv.closed {
			srv.sessionEnded(note)
		}
	}()
}

// endWait is how long a session that ended waits for its stdio server's
// exit, to say how it ended.
const endWait = 200 * time.Millisecond

// sessionEnded handles the end of the server's session: the server is
// started again in the background (retry.go), at once when its backoff
// allows; a call before that restarts it itself. One that ran for
// backoffMax ends the server's trouble: its restart is at once. A server
// that may be restarted at once keeps its tools meanwhile; one that must
// wait for its backoff (it crashed soon after a restart) has them
// withdrawn until a start lists them, rather than offered while no call
// can reach them. note says how a stdio server ended, or is "".
// srv.mu is held.
func (srv *server) sessionEnded(note string) {
	now := srv.now()
	srv.endedAt = now
	ran := now.Sub(srv.started).Round(time.Millisecond)
	if note != "" {
		note = " (" + note + ")"
	}
	srv.settle()
	if !now.Before(srv.retryAt) || !srv.offering() {
		srv.lost(fmt.Errorf("its session ended %v after its start%s", ran, note))
		return
	}
	srv.setTools(nil, nil)
	srv.lost(fmt.Errorf("its session ended %v after its start%s, within the backoff; its tools are no longer offered", ran, note))
}

// settle notes, when the server's session (live or ended) ran for
// backoffMax, that the server is well: its next restart is at once, and a
// failure after it is logged as a new one. A session that ended before
// sessionEnded saw it is taken to have run until now. A session is
// counted once. srv.mu is held.
func (srv *server) settle() {
	end := srv.now()
	if !srv.endedAt.IsZero() {
		end = srv.endedAt
	}
	if srv.session == nil || srv.settled || end.Sub(srv.started) < srv.backoffMax {
		return
	}
	srv.settled = true
	srv.backoff, srv.retryAt = 0, time.Time{}
	srv.down, srv.tries, srv.backSaid = false, 0, 0
}

// live returns the server's session, starting it again when it ended
// (restart), and never after Set.Close, and what says how its stdio
// server ended (dial).
func (srv *server) live(ctx context.Context) (*mcp.ClientSession, func(time.Duration) string, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed {
		return nil, nil, fmt.Errorf("%w: closed", ErrServerDown)
	}
	if !srv.up() {
		if _, err := srv.restart(ctx); err != nil {
			return nil, nil, err
		}
	}
	return srv.session, srv.words, nil
}

// up reports whether the server has a session that has not ended. srv.mu
// is held.
func (srv *server) up() bool {
	if srv.session == nil {
		return false
	}
	select {
	case <-srv.ended:
		return false
	default:
		return true
	}
}

// restart starts the server whose session ended or whose start failed:
// at once the first time, then no sooner than the backoff allows. The
// start, its tools listed again within the same bounds as at the first
// start, is bounded by DefaultConnectTimeout and by ctx. A restart whose
// listing fails or is refused leaves the server down and offering no
// tools: the tools of its last listing may be gone, and a call must not
// reach a tool of another schema; it is then restarted in the background.
// srv.mu is held.
func (srv *server) restart(ctx context.Context) (*mcp.ClientSession, error) {
	now := srv.now()
	srv.settle() // it ran long enough: start counting again
	if now.Before(srv.retryAt) {
		return nil, fmt.Errorf("%w: its session ended; the next restart is in %v", ErrServerDown,
			ceil(srv.retryAt.Sub(now), 100*time.Millisecond))
	}
	srv.backoff = min(max(2*srv.backoff, srv.backoffMin), srv.backoffMax)
	srv.retryAt = now.Add(srv.backoff) // of the restart after this one
	if srv.session != nil {
		_ = srv.session.Close() // what is left of it: a stdio server's group
		srv.session = nil
	}
	cctx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	defer cancel()
	defer context.AfterFunc(srv.stopped, cancel)()
	session, words, err := srv.dial(cctx)
	if err != nil {
		err = fmt.Errorf("%w: restart: %w", ErrServerDown, err)
		if !srv.offering() {
			srv.lost(err) // no call can reach it
		}
		return nil, err
	}
	tools, skipped, err := srv.list(cctx, session)
	if err != nil {
		session.Close()
		err = fmt.Errorf("%w: restart: list tools: %w", ErrServerDown, err)
		if srv.offering() {
			err = fmt.Errorf("%w; its tools are no longer offered", err)
		}
		srv.setTools(nil, nil)
		srv.lost(err)
		return nil, err
	}
	srv.use(session, words)
	// Tools offered again after they were withdrawn are logged by back.
	had := srv.offering()
	if changed, notOffered := srv.setTools(tools, skipped); changed && had {
		srv.noteChange("restart", len(tools), notOffered)
	}
	srv.back()
	return session, nil
}

// ceil rounds d up to a multiple of m: a wait of 40 ms is not "0s".
func ceil(d, m time.Duration) time.Duration {
	return (d + m - 1).Truncate(m)
}

// setTools makes tools and skipped the server's, and calls its Changed
// function when the tools differ from those it had, which it reports with
// the tools of the new listing it does not offer (and why).
// srv.mu is held, so that the Changed calls of two listings come in the
// order of their listings.
func (srv *server) setTools(tools []*mcp.Tool, skipped []error) (changed bool, notOffered []error) {
	srv.toolsMu.Lock()
	same := sameTools(srv.tools, tools)
	srv.tools, srv.skipped = tools, skipped
	srv.toolsMu.Unlock()
	if same {
		return false, nil
	}
	offered, errs := srv.offer()
	if srv.changed != nil {
		srv.changed(srv.name, offered, errs)
	}
	return true, errs
}

// sameTools reports whether a and b list the same tools, in JSON.
func sameTools(a, b []*mcp.Tool) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// offering reports whether the server's last listing has any tool.
func (srv *server) offering() bool {
	srv.toolsMu.Lock()
	defer srv.toolsMu.Unlock()
	return len(srv.tools) > 0
}

// offers reports whether the server's last listing has tool.
func (srv *server) offers(tool string) bool {
	srv.toolsMu.Lock()
	defer srv.toolsMu.Unlock()
	return slices.ContainsFunc(srv.tools, func(t *mcp.Tool) bool { return t.Name == tool })
}

// close ends the server's session and its restarts, and waits for its
// background retry.
func (srv *server) close() error {
	srv.stop()
	srv.mu.Lock()
	srv.closed = true
	var err error
	if srv.session != nil { // else closed when it ended, and not started again
		err = srv.session.Close()
	}
	srv.mu.Unlock()
	srv.retries.Wait()
	srv.closeRelists()
	return err
}

// list reads the tools of session, page by page, within the bounds: it
// stops reading at the first tool past MaxTools or MaxListBytes, and
// leaves out (in skipped) a tool larger than MaxToolBytes, so that
// neither a huge listing nor one that pages without end can fill the
// agent's memory.
func (srv *server) list(ctx context.Context, session *mcp.ClientSession) (tools []*mcp.Tool, skipped []error, err error) {
	var total, listed int
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, listTooLarge(err)
		}
		if listed++; listed > MaxTools {
			return nil, nil, fmt.Errorf("%w: more than %d tools", ErrListTooLarge, MaxTools)
		}
		b, err := json.Marshal(tool)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("mcp tool %q: %w", srv.shown(tool.Name), err))
			continue
		}
		if len(b) > MaxToolBytes {
			skipped = append(skipped, fmt.Errorf("mcp tool %q cannot be offered: its definition is %d bytes, more than %d",
				srv.shown(tool.Name), len(b), MaxToolBytes))
			continue
		}
		if total += len(b); total > MaxListBytes {
			return nil, nil, fmt.Errorf("%w: tool definitions of more than %d bytes", ErrListTooLarge, MaxListBytes)
		}
		tools = append(tools, tool)
	}
	return tools, skipped, nil
}

// Tools returns the servers' tools as Go tools for a skills.Toolset,
// sorted by name, and an error for each tool whose name cannot be offered
// (the combined name must be a valid tool name).
func (s *Set) Tools() ([]skills.GoTool, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []skills.GoTool
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.sessions)) {
		tools, e := s.sessions[name].offer()
		out, errs = append(out, tools...), append(errs, e...)
	}
	return out, errs
}

// offer returns the server's tools as Set.Tools does.
func (srv *server) offer() ([]skills.GoTool, []error) {
	srv.toolsMu.Lock()
	defer srv.toolsMu.Unlock()
	var out []skills.GoTool
	errs := slices.Clone(srv.skipped)
	for _, mt := range srv.tools {
		g, err := srv.goTool(mt)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, g)
	}
	return out, errs
}

// Close ends every session, all at once, and waits for them; it is
// idempotent. A stdio server that had to be stopped with the signal Close
// sends after the grace period did stop as asked: that is no error.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := make([]error, 0, len(s.sessions))
	var (
		mu sync.Mutex // guards errs
		wg sync.WaitGroup
	)
	for name, srv := range s.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.close(); err != nil && !stoppedBySignal(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("close mcp server %q: %w", name, err))
				mu.Unlock()
			}
		}()
		delete(s.sessions, name)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stoppedBySignal reports whether err is the exit of a process ended by
// SIGTERM or SIGKILL, the signals Close sends a server slow to stop.
func stoppedBySignal(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && (ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL)
}

// goTool wraps one MCP tool.
func (srv *server) goTool(mt *mcp.Tool) (skills.GoTool, error) {
	name := srv.name + Separator + mt.Name
	schema, err := schemaMap(mt.InputSchema)
	if err != nil {
		return skills.GoTool{}, fmt.Errorf("mcp tool %q: %w", name, err)
	}
	g := skills.GoTool{
		Tool: skills.Tool{
			Name: name, Description: mt.Description, Permissions: srv.cfg.Permissions, Skill: srv.name,
			// Advertised, so that a caller's deadline (the loop's timeout
			// rule, an orchestrator's command) is this one, not a
			// category's default that would cut the call short.
			TimeoutMS: srv.timeout().Milliseconds(),
		},
		Schema: schema,
		Source: skills.SourceMCP,
		Run: func(ctx context.Context, args map[string]any) skills.Output {
			return srv.call(ctx, mt.Name, args)
		},
	}
	// Toolset.Add would refuse the whole batch; leave out only this tool.
	if err := skills.CheckName(name); err != nil {
		return skills.GoTool{}, fmt.Errorf("mcp tool %q cannot be offered: %w", name, err)
	}
	return g, nil
}

// schemaMap turns the schema as the SDK decoded it into a map.
func schemaMap(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return map[string]any{"type": "object"}, nil
	}
	return m, nil
}

// shown is the combined name of tool for a message: a name too long to
// be offered is cut to its start.
func (srv *server) shown(tool string) string {
	const most = 64
	if len(tool) > most {
		tool = strings.ToValidUTF8(tool[:most], "") + "..."
	}
	return srv.name + Separator + tool
}

// timeout is the server's bound on one call.
func (srv *server) timeout() time.Duration {
	if srv.cfg.TimeoutMS > 0 {
		return time.Duration(srv.cfg.TimeoutMS) * time.Millisecond
	}
	return DefaultTimeout
}

// call runs one tool call with the server's timeout, or the caller's
// deadline when that comes first; a timeout names the one that applied.
func (srv *server) call(ctx context.Context, tool string, args map[string]any) skills.Output {
	timeout := srv.timeout()
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), 0)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	session, words, err := srv.live(cctx)
	if err != nil {
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("mcp %s%s%s: %v", srv.name, Separator, tool, err))
	}
	if !srv.offers(tool) {
		return skills.Failed(wire.ErrNotFound, fmt.Sprintf("mcp %s%s%s: the server no longer offers this tool since its last listing",
			srv.name, Separator, tool))
	}
	res, err := session.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	switch {
	case err == nil:
	case ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return skills.Failed(wire.ErrInterrupted, fmt.Sprintf("mcp %s%s%s: interrupted", srv.name, Separator, tool))
	case cctx.Err() != nil:
		return skills.Failed(wire.ErrTimeout, fmt.Sprintf("mcp %s%s%s: no answer within %v", srv.name, Separator, tool,
			timeout.Round(time.Millisecond)))
	case resultTooLarge(err) != nil:
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("mcp %s%s%s: %v", srv.name, Separator, tool, resultTooLarge(err)))
	case strings.Contains(err.Error(), "invalid params"):
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("mcp %s%s%s: %v", srv.name, Separator, tool, err))
	case !errors.As(err, new(*jsonrpc.Error)): // no answer of the server's: its session ended
		msg := fmt.Sprintf("mcp %s%s%s: %v", srv.name, Separator, tool, err)
		if w := words(endWait); w != "" {
			msg += " (" + w + ")"
		}
		return skills.Failed(wire.ErrExecutionFailed, msg)
	default:
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("mcp %s%s%s: %v", srv.name, Separator, tool, err))
	}
	return convert(res)
}

// convert maps MCP content to blocks; an error result becomes an
// execution_failed block carrying its text, and so does an image that is
// not a PNG, JPEG, GIF or WebP of the type it claims (skills.CheckImage).
func convert(res *mcp.CallToolResult) skills.Output {
	var out skills.Output
	var texts []string
	for i, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out.Content = append(out.Content, skills.TextBlock(c.Text))
			texts = append(texts, c.Text)
		case *mcp.ImageContent:
			// The same rule as a skill's images: a block the model's
			// provider would refuse would fail every later request of the
			// conversation that holds it.
			if err := skills.CheckImage(c.MIMEType, c.Data); err != nil {
				return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("the MCP tool's image (block %d) is refused: %v", i, err))
			}
			out.Content = append(out.Content, skills.ImageBlock(c.MIMEType, base64.StdEncoding.EncodeToString(c.Data)))
		case *mcp.AudioContent:
			out.Content = append(out.Content, skills.TextBlock(fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data))))
		case *mcp.ResourceLink:
			out.Content = append(out.Content, skills.TextBlock("[resource "+c.URI+"]"))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				out.Content = append(out.Content, skills.TextBlock(c.Resource.Text))
			} else if c.Resource != nil {
				out.Content = append(out.Content, skills.TextBlock("[resource "+c.Resource.URI+"]"))
			}
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Content = append(out.Content, skills.TextBlock(string(b)))
		}
	}
	if res.IsError {
		msg := strings.Join(texts, "\n")
		if msg == "" {
			msg = "the MCP tool reported an error without a message"
		}
		out.Content = append(out.Content, skills.ErrorBlock(wire.ErrExecutionFailed, msg))
	}
	return out
}

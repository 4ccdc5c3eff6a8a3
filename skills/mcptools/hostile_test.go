package mcptools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// connectHostile connects to the hostile test server run with args.
func connectHostile(t *testing.T, args ...string) (*Set, []error) {
	t.Helper()
	set, errs := Connect(context.Background(), map[string]ServerConfig{"h": {Command: hostileBin, Args: args}}, nil)
	t.Cleanup(func() { set.Close() })
	return set, errs
}

// TestListBounds: a server's listing is bounded in tools and bytes, so a
// huge listing, or one that pages without end, is refused instead of
// filling the agent's memory (100 000 tools held 578 MB of a node before;
// endless paging grew it by 1.8 GB in the 15 s connect timeout).
func TestListBounds(t *testing.T) {
	wideTools := MaxListBytes/(MaxToolBytes/2) + 1 // each half the tool bound: together past the list bound
	for _, tc := range []struct {
		name      string
		args      []string
		wantErr   error // of Connect
		wantTools int
		wantSkip  string // an error of Tools
	}{
		{"at the tool bound", []string{"tools", fmt.Sprint(MaxTools), "10"}, nil, MaxTools, ""},
		{"one tool more", []string{"tools", fmt.Sprint(MaxTools + 1), "10"}, ErrListTooLarge, 0, ""},
		{"pages without end", []string{"pages"}, ErrListTooLarge, 0, ""},
		{"a tool too large", []string{"tools", "2", fmt.Sprint(MaxToolBytes)}, nil, 0, "more than 65536"},
		{"tools too large together", []string{"tools", fmt.Sprint(wideTools), fmt.Sprint(MaxToolBytes / 2)}, ErrListTooLarge, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, errs := connectHostile(t, tc.args...)
			if tc.wantErr != nil {
				if len(errs) != 1 || !errors.Is(errs[0], tc.wantErr) {
					t.Fatalf("connect errors %v, want %v", errs, tc.wantErr)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			tools, errs := set.Tools()
			if len(tools) != tc.wantTools {
				t.Errorf("%d tools offered, want %d", len(tools), tc.wantTools)
			}
			if tc.wantSkip == "" && len(errs) > 0 || tc.wantSkip != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.wantSkip)) {
				t.Errorf("tool errors %v, want one with %q", errs, tc.wantSkip)
			}
		})
	}
}

// TestConnectAllAtOnce: servers are connected at the same time, so that
// each slow one does not add its own connect timeout to the agent's start
// (three silent servers held evoclaw serve 45 s before it was ready). The
// servers here answer only once all three run: connected one after the
// other, the first two time out.
func TestConnectAllAtOnce(t *testing.T) {
	dir := t.TempDir()
	servers := map[string]ServerConfig{}
	for _, name := range []string{"a", "b", "c"} {
		servers[name] = ServerConfig{Command: hostileBin, Args: []string{"meet", dir, "3"}}
	}
	set, errs := Connect(context.Background(), servers, nil)
	t.Cleanup(func() { set.Close() })
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if tools, _ := set.Tools(); len(tools) != 3 {
		t.Fatalf("%d tools, want one of each server", len(tools))
	}
}

// TestImagesChecked: an MCP tool's image must be a PNG, JPEG, GIF or WebP
// of the type it claims, as a skill's must; anything else fails the call
// instead of reaching the model's provider, which would refuse it in every
// later request of the conversation. Before, any type and bytes passed.
func TestImagesChecked(t *testing.T) {
	const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	html := base64.StdEncoding.EncodeToString([]byte("<html><script>alert(1)</script></html>"))
	for _, tc := range []struct {
		name, mime, data string
		want             wire.ErrorType
	}{
		{"a png", "image/png", png1x1, ""},
		{"html called a png", "image/png", html, wire.ErrExecutionFailed},
		{"an svg", "image/svg+xml", html, wire.ErrExecutionFailed},
		{"a png called html", "text/html", png1x1, wire.ErrExecutionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, errs := connectHostile(t, "image", tc.mime, tc.data)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			tools, _ := set.Tools()
			out := tools[0].Run(context.Background(), nil)
			if got := out.ErrorType(); got != tc.want {
				t.Fatalf("error type %q (%s), want %q", got, out.ErrorText(), tc.want)
			}
		})
	}
}

// TestServerRestartedAfterItEnds: a server whose session ended (here it
// exits after each call) is started again by the next call: at once the
// first time, then only once its backoff has passed (the call between
// fails, saying when), doubling; a session that ran for
// RestartBackoffMax starts the count again; after Close, never. Before,
// a server that exited stayed down until the agent restarted.
func TestServerRestartedAfterItEnds(t *testing.T) {
	set, errs := connectHostile(t, "crash", "1")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	srv := set.sessions["h"]
	advance := fakeClock(srv)
	tools, _ := set.Tools()
	call := func() skills.Output { return tools[0].Run(context.Background(), nil) }
	waitEnded := func() { t.Helper(); awaitEnded(t, srv) }
	ok := func(what string) {
		t.Helper()
		if out := call(); out.ErrorType() != "" || !strings.Contains(out.Text(), "ok") {
			t.Fatalf("%s: %s %q", what, out.ErrorType(), out.ErrorText())
		}
	}
	down := func(what, wait string) {
		t.Helper()
		out := call()
		if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "mcp server is down") || !strings.Contains(out.ErrorText(), wait) {
			t.Fatalf("%s: %s %q, want execution_failed saying it is down, next restart in %s", what, out.ErrorType(), out.ErrorText(), wait)
		}
	}

	ok("first call")
	waitEnded()
	ok("the call after the server exited: restarted at once")
	waitEnded()
	down("the next call within the backoff", "1s")
	advance(RestartBackoffMin)
	ok("once the backoff passed")
	waitEnded()
	down("again within the doubled backoff", "2s")
	advance(2 * RestartBackoffMin)
	// This session runs long: its server answers two calls before it
	// exits, and the clock moves on between them, while it is surely up.
	// (Moved on after a one-call server's answer, the clock raced the
	// session's end: seen first, the end made the session a short one, 2
	// runs in 100.)
	setArgs := func(args ...string) {
		srv.mu.Lock()
		srv.cfg.Args = args
		srv.mu.Unlock()
	}
	setArgs("crash", "2")
	ok("once the doubled backoff passed")
	setArgs("crash", "1")
	advance(RestartBackoffMax)
	ok("the long session's second call")
	waitEnded()
	ok("after a long session: at once again")

	// A restart that fails is counted like one that worked: the call
	// says why, the next waits for the backoff.
	waitEnded()
	srv.mu.Lock()
	srv.cfg.Command = filepath.Join(t.TempDir(), "gone")
	srv.mu.Unlock()
	advance(RestartBackoffMin)
	if out := call(); out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "mcp server is down: restart:") {
		t.Fatalf("a restart that fails: %s %q", out.ErrorType(), out.ErrorText())
	}
	down("the call after a failed restart", "2s")

	if err := set.Close(); err != nil && !strings.Contains(err.Error(), "exit status 3") {
		t.Fatal(err)
	}
	if out := call(); out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "closed") {
		t.Fatalf("a call after Close: %s %q", out.ErrorType(), out.ErrorText())
	}
}

// TestToolsListedAgainAtRestart: a server restarted after its session
// ended has its tools listed again, within the same bounds: tools it no
// longer offers answer not_found instead of reaching it, the new list is
// offered (Set.Tools, Options.Changed), and a restart whose listing is
// refused leaves the server offering nothing. Before, the agent kept the
// first listing: calls went to tools the server no longer had, and its
// new tools were never offered.
func TestToolsListedAgainAtRestart(t *testing.T) {
	type change struct {
		server string
		names  []string
	}
	var (
		mu      sync.Mutex // guards changes
		changes []change
	)
	set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"h": {Command: hostileBin, Args: []string{"gens", t.TempDir()}}},
		Options{Changed: func(server string, tools []skills.GoTool, _ []error) {
			mu.Lock()
			defer mu.Unlock()
			changes = append(changes, change{server, goToolNames(tools)})
		}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { set.Close() })
	srv := set.sessions["h"]
	advance := fakeClock(srv)
	waitEnded := func() { t.Helper(); awaitEnded(t, srv) }
	offered := func() []string {
		tools, _ := set.Tools()
		return goToolNames(tools)
	}
	lastChange := func() []string {
		mu.Lock()
		defer mu.Unlock()
		if len(changes) == 0 {
			return nil
		}
		return changes[len(changes)-1].names
	}

	first, _ := set.Tools()
	if out := first[0].Run(context.Background(), nil); out.Text() != "gen 0" {
		t.Fatalf("first call: %s %q", out.ErrorType(), out.Text()+out.ErrorText())
	}
	waitEnded()
	for _, step := range []struct {
		name     string
		tool     func() skills.GoTool
		wantType wire.ErrorType
		want     string // in the text or error
		offered  string // the tools offered after the call (before it, for one that succeeds)
	}{
		{"a tool gone since the restart", func() skills.GoTool { return first[0] }, wire.ErrNotFound, "no longer offers", "h__t1"},
		{"the tool the restart listed", func() skills.GoTool { t1, _ := set.Tools(); return t1[0] }, "", "gen 1", "h__t1"},
		{"a restart whose listing is refused", func() skills.GoTool { return first[0] }, wire.ErrExecutionFailed, "tool list too large", ""},
	} {
		tool := step.tool()
		checkOffered := func(when string) {
			t.Helper()
			if got := strings.Join(offered(), ","); got != step.offered {
				t.Fatalf("%s: offered %q %s, want %q", step.name, got, when, step.offered)
			}
			if got := strings.Join(lastChange(), ","); got != step.offered {
				t.Fatalf("%s: last change %q %s, want %q", step.name, got, when, step.offered)
			}
		}
		if step.wantType == "" {
			// The call succeeds and its server exits at once, which
			// may withdraw the tools before the call returns here:
			// what the restart listed is checked before the call.
			checkOffered("before the call")
		}
		out := tool.Run(context.Background(), nil)
		if out.ErrorType() != step.wantType || !strings.Contains(out.Text()+out.ErrorText(), step.want) {
			t.Fatalf("%s: %s %q, want %q %q", step.name, out.ErrorType(), out.Text()+out.ErrorText(), step.wantType, step.want)
		}
		if step.wantType != "" {
			checkOffered("after the call")
		}
		if step.wantType == "" {
			// The server exited after the call, within the backoff
			// of its restart: its tools are withdrawn.
			waitEnded()
			testenv.Eventually(t, 10*time.Second, func() bool { return len(offered()) == 0 && len(lastChange()) == 0 },
				"the tools withdrawn, and the change reported")
			advance(RestartBackoffMin)
		}
	}
	if len(changes) != 2 || changes[0].server != "h" {
		t.Errorf("changes %+v, want two of server h", changes)
	}
}

// fakeClock makes srv's clock one that stands still but when the
// returned function advances it, and its background retry one that never
// fires, so that only calls restart it.
func fakeClock(srv *server) (advance func(time.Duration)) {
	var (
		mu    sync.Mutex // guards clock
		clock = time.Unix(1_700_000_000, 0)
	)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.started = clock
	srv.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	srv.after = func(time.Duration) <-chan time.Time { return nil }
	return func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(d)
	}
}

// awaitEnded waits for the end of srv's session, which its server's exit
// after a call brings.
func awaitEnded(t *testing.T, srv *server) {
	t.Helper()
	srv.mu.Lock()
	ended := srv.ended
	srv.mu.Unlock()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's session did not end after its last call")
	}
}

// goToolNames lists the names of tools.
func goToolNames(tools []skills.GoTool) []string {
	var names []string
	for _, g := range tools {
		names = append(names, g.Tool.Name)
	}
	return names
}

package mcptools

import (
	"context"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// changeLog records what Options.Changed reports.
type changeLog struct {
	mu      sync.Mutex // guards changes
	changes [][]string
}

func (c *changeLog) changed(_ string, tools []skills.GoTool, _ []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, goToolNames(tools))
}

// last returns the last change reported and how many there were.
func (c *changeLog) last() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.changes) == 0 {
		return nil, 0
	}
	return c.changes[len(c.changes)-1], len(c.changes)
}

// relistCounts returns the notifications srv received and the listings
// they caused.
func relistCounts(srv *server) (notices, relistings int) {
	srv.relistMu.Lock()
	defer srv.relistMu.Unlock()
	return srv.notices, srv.relistings
}

// TestToolsListedAgainWhenChanged: a server (the SDK's own server side)
// that replaces a tool says so with notifications/tools/list_changed; its
// tools are listed again on the same session and what the agent offers
// follows (Set.Tools, Options.Changed): the new tool is offered and
// answers, the tool gone answers not_found instead of reaching the
// server. Before, the notification was ignored: the first listing stayed
// offered until the server restarted.
func TestToolsListedAgainWhenChanged(t *testing.T) {
	var changes changeLog
	set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"c": {Command: serverBin, Args: []string{"-changing"}}},
		Options{Changed: changes.changed, relistEvery: 10 * time.Millisecond})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { set.Close() })
	offered := func() []string { tools, _ := set.Tools(); return goToolNames(tools) }
	first, _ := set.Tools()
	tool := func(tools []skills.GoTool, name string) skills.GoTool {
		t.Helper()
		for _, g := range tools {
			if g.Tool.Name == name {
				return g
			}
		}
		t.Fatalf("no tool %s in %v", name, goToolNames(tools))
		return skills.GoTool{}
	}
	for gen, want := range [][]string{{"c__next", "c__v1"}, {"c__next", "c__v2"}} {
		if out := tool(first, "c__next").Run(context.Background(), nil); out.ErrorType() != "" {
			t.Fatalf("next: %s %q", out.ErrorType(), out.ErrorText())
		}
		testenv.Eventually(t, 20*time.Second, func() bool { return slices.Equal(offered(), want) }, "the new tools offered")
		if last, _ := changes.last(); !slices.Equal(last, want) {
			t.Fatalf("last change %v, want %v", last, want)
		}
		now, _ := set.Tools()
		if out := tool(now, want[1]).Run(context.Background(), nil); out.Text() != strings.TrimPrefix(want[1], "c__") {
			t.Fatalf("the new tool: %s %q", out.ErrorType(), out.Text()+out.ErrorText())
		}
		if out := first[1].Run(context.Background(), nil); out.ErrorType() != wire.ErrNotFound || !strings.Contains(out.ErrorText(), "no longer offers") {
			t.Fatalf("generation %d: the first tool, gone: %s %q", gen+1, out.ErrorType(), out.Text()+out.ErrorText())
		}
	}
}

// TestListChangedFlood: a server that says its tools changed without end
// has them listed at most once per interval, the notifications between
// coalesced, and one goroutine lists, however many come; its unchanged
// tools stay offered, nothing is logged, and Close stops the listing.
func TestListChangedFlood(t *testing.T) {
	dir := t.TempDir()
	var logs testenv.Buffer
	const every = 20 * time.Millisecond
	var changes changeLog
	goroutines := runtime.NumGoroutine()
	start := time.Now()
	set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"h": {Command: hostileBin, Args: []string{"notify", dir, "0", "0"}}},
		Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Changed: changes.changed, relistEvery: every})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { set.Close() })
	srv := set.sessions["h"]
	const floods = 3000
	most := 0
	// The listings' answers queue behind the flood the session reads in
	// order: wait for one listing done as well as for the notifications.
	testenv.Eventually(t, 20*time.Second, func() bool {
		most = max(most, runtime.NumGoroutine()-goroutines)
		n, listed := relistCounts(srv)
		return n >= floods && listed >= 1
	}, "the notifications arrive and a listing follows")
	elapsed := time.Since(start)
	notices, relistings := relistCounts(srv)
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	_, after := relistCounts(srv)
	listings := starts(t, dir)
	t.Logf("%d notifications in %v: %d listings after the first, %d goroutines more at the most", notices, elapsed.Round(time.Millisecond), relistings, most)
	if bound := int(elapsed/every) + 2; relistings < 1 || relistings > bound {
		t.Errorf("%d listings after %d notifications in %v, want 1 to %d", relistings, notices, elapsed, bound)
	}
	if listings > relistings+2 || after > relistings+1 {
		t.Errorf("the server saw %d listings, %d after Close; %d counted before", listings, after, relistings)
	}
	if tools, _ := set.Tools(); len(tools) != 0 {
		t.Errorf("%d tools offered after Close", len(tools))
	}
	if _, n := changes.last(); n > 0 || logs.String() != "" {
		t.Errorf("%d changes and log %q for a listing that never changed", n, logs.String())
	}
	// A stdio session takes a dozen goroutines; one per notification
	// would be thousands.
	if most > 40 {
		t.Errorf("%d goroutines more than before Connect at the most", most)
	}
}

// TestRefusedListingAfterChange: a listing after the server said its
// tools changed is bounded like every listing; one refused (513 tools)
// ends the session and withdraws all the server's tools, as a restart's
// refused listing does, and the server is started again in the
// background.
func TestRefusedListingAfterChange(t *testing.T) {
	dir := t.TempDir()
	var logs testenv.Buffer
	var changes changeLog
	set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"h": {Command: hostileBin, Args: []string{"notify", dir, "1", "2"}}},
		Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Changed: changes.changed, relistEvery: time.Millisecond,
			backoffMin: time.Hour, backoffMax: time.Hour})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { set.Close() })
	srv := set.sessions["h"]
	testenv.Eventually(t, 20*time.Second, func() bool {
		_, n := changes.last()
		return n > 0
	}, "the tools withdrawn")
	if last, _ := changes.last(); len(last) != 0 {
		t.Fatalf("offered %v after a refused listing", last)
	}
	if tools, _ := set.Tools(); len(tools) != 0 {
		t.Fatalf("Tools offers %v", goToolNames(tools))
	}
	srv.mu.Lock()
	session, retrying := srv.session, srv.retrying
	srv.mu.Unlock()
	if session != nil || !retrying {
		t.Errorf("session %v, retrying %v: want it ended and restarted in the background", session, retrying)
	}
	if log := logs.String(); !strings.Contains(log, "tool list too large") || !strings.Contains(log, "no longer offered") {
		t.Errorf("log %q, want the refused listing", log)
	}
	out := set.sessions["h"].call(context.Background(), "t", nil)
	if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "mcp server is down") {
		t.Errorf("a call of the withdrawn tool: %s %q", out.ErrorType(), out.ErrorText())
	}
}

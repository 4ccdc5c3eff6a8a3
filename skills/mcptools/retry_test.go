package mcptools

import (
	"context"
	"log/slog"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// TestServerRetriedInTheBackground: a server that offers no tools, since
// its first start or a restart failed its listing or its session ended
// after it listed none, is started again in
// the background with the backoff, and once a start lists its tools they
// are offered again (Set.Tools, Options.Changed) and answer. Before, no
// call could reach such a server: it stayed down, offering nothing, until
// the agent restarted.
func TestServerRetriedInTheBackground(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    string // of the hostile server: flaky or empty
		fail    string // the starts (from, to) whose listing fails, or is empty
		crashes bool   // the first start lists, a call makes it exit and restart
		back    string // what a call answers once the server is back
	}{
		{"its first start fails", "flaky", "0 1", false, "gen 1"},
		{"its restart's listing fails once", "flaky", "1 2", true, "gen 2"},
		{"its first two starts fail", "flaky", "0 2", false, "gen 2"},
		{"it lists no tools and ends", "empty", "0 1", false, "gen 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var (
				mu      sync.Mutex // guards changes
				changes [][]string
			)
			args := append([]string{tc.mode, dir}, strings.Fields(tc.fail)...)
			set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"h": {Command: hostileBin, Args: args}},
				Options{Changed: func(server string, tools []skills.GoTool, _ []error) {
					mu.Lock()
					defer mu.Unlock()
					changes = append(changes, goToolNames(tools))
				}})
			t.Cleanup(func() { set.Close() })
			offered := func() []string { tools, _ := set.Tools(); return goToolNames(tools) }
			switch {
			case tc.mode == "empty":
				if len(errs) > 0 {
					t.Fatal(errs)
				}
			case !tc.crashes:
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), "not ready at start 0") {
					t.Fatalf("connect errors %v, want the first start's", errs)
				}
			default:
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				first, _ := set.Tools()
				if out := first[0].Run(context.Background(), nil); out.Text() != "gen 0" {
					t.Fatalf("first call: %s %q", out.ErrorType(), out.Text()+out.ErrorText())
				}
				// The server exited after answering; it is started
				// again at once, by the next call or in the
				// background, and that start's listing fails: the call
				// says so, or that the server is down since.
				awaitEnded(t, set.sessions["h"])
				out := first[0].Run(context.Background(), nil)
				if out.ErrorType() != wire.ErrExecutionFailed ||
					!strings.Contains(out.ErrorText(), "not ready at start 1") && !strings.Contains(out.ErrorText(), "mcp server is down") {
					t.Fatalf("the call after the server exited: %q", out.ErrorText())
				}
			}
			if got := offered(); len(got) > 0 {
				t.Fatalf("offered %v while the server is down", got)
			}
			deadline := time.Now().Add(20 * time.Second)
			for len(offered()) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the server's tools were not offered again")
				}
				time.Sleep(20 * time.Millisecond) // polling the background retry
			}
			if got := offered(); !slices.Equal(got, []string{"h__t"}) {
				t.Fatalf("offered %v, want h__t", got)
			}
			mu.Lock()
			last := changes[len(changes)-1]
			mu.Unlock()
			if !slices.Equal(last, []string{"h__t"}) {
				t.Errorf("last change %v, want h__t", last)
			}
			tools, _ := set.Tools()
			if out := tools[0].Run(context.Background(), nil); out.Text() != tc.back {
				t.Fatalf("a call once it is back: %s %q, want %q", out.ErrorType(), out.Text()+out.ErrorText(), tc.back)
			}
		})
	}
}

// awaitStarts waits until the servers run with dir have started n times.
func awaitStarts(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for starts(t, dir) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d starts, want %d", starts(t, dir), n)
		}
		time.Sleep(5 * time.Millisecond) // polling another process's progress
	}
}

// starts counts the starts of the flaky servers run with dir.
func starts(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestRetryOfAServerThatNeverComesBack: a server whose every start fails
// costs one goroutine beside what a start takes, however many backoff
// periods pass, and the log says that it went down, then only at the
// 2nd, 4th, 8th... failed start; Close stops the retries and waits for
// them.
func TestRetryOfAServerThatNeverComesBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(dir string) ServerConfig
	}{
		{"its listing always fails", func(dir string) ServerConfig {
			return ServerConfig{Command: hostileBin, Args: []string{"flaky", dir, "0", "1000000"}}
		}},
		{"it cannot be started", func(dir string) ServerConfig {
			return ServerConfig{Command: filepath.Join(dir, "missing")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var logs testenv.Buffer
			// The goroutine that forks every child lives as long as
			// the process, from its first start on.
			if c := exec.Command(hostileBin, "tools", "0", "0"); proc.StartTied(c) == nil {
				_ = c.Wait() // its input is empty: it ends
			}
			before := runtime.NumGoroutine()
			set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"h": tc.cfg(dir)},
				Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), backoffMin: time.Millisecond, backoffMax: 4 * time.Millisecond})
			if len(errs) != 1 {
				t.Fatalf("connect errors %v, want one", errs)
			}
			srv := set.sessions["h"]
			const periods = 40 // of the longest backoff, at the least
			most := 0
			for tries := 0; tries < periods; {
				most = max(most, runtime.NumGoroutine()-before)
				srv.mu.Lock()
				tries = srv.tries
				srv.mu.Unlock()
				time.Sleep(time.Millisecond) // polling the background retry
			}
			// One start of a stdio server takes a dozen goroutines
			// (the SDK's, the pipes', the process's); one leaked per
			// start would pass this after periods starts.
			if most > periods/2 {
				t.Errorf("%d goroutines more than before at the most, over %d failed starts", most, periods)
			}
			if err := set.Close(); err != nil {
				t.Fatal(err)
			}
			srv.mu.Lock()
			tries, retrying := srv.tries, srv.retrying
			srv.mu.Unlock()
			if retrying {
				t.Error("still retrying after Close")
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			t.Logf("%d failed starts: %d goroutines more at the most, %d log lines", tries, most, len(lines))
			// The line that it went down, and one at each power of two.
			if bound := 1 + bits.Len(uint(tries)); len(lines) > bound || len(lines) < 2 {
				t.Errorf("%d log lines over %d failed starts, want 2 to %d:\n%s", len(lines), tries, bound, logs.String())
			}
			if !strings.Contains(lines[0], "started again in the background") || strings.Contains(logs.String(), "offers its tools again") {
				t.Errorf("log:\n%s", logs.String())
			}
			deadline := time.Now().Add(10 * time.Second)
			for runtime.NumGoroutine() > before {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("%d goroutines more than before Connect after Close:\n%s", runtime.NumGoroutine()-before, buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(5 * time.Millisecond) // polling the exit of the last start's goroutines
			}
			n := starts(t, dir)
			time.Sleep(20 * srv.backoffMax) // a retry left running would start it again
			if got := starts(t, dir); got != n {
				t.Errorf("%d starts after Close, want none", got-n)
			}
		})
	}
}

// TestCloseStopsABackgroundStart: Close stops a background start that
// waits on a server that never answers, instead of waiting out its
// DefaultConnectTimeout.
func TestCloseStopsABackgroundStart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// It answers initialize only once two such servers run: never.
	set, errs := ConnectWith(ctx, map[string]ServerConfig{"h": {Command: hostileBin, Args: []string{"meet", dir, "2"}}},
		Options{backoffMin: time.Millisecond, backoffMax: time.Millisecond})
	if len(errs) != 1 {
		t.Fatalf("connect errors %v, want one", errs)
	}
	awaitStarts(t, dir, 2) // the background start runs
	start := time.Now()
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= DefaultConnectTimeout {
		t.Fatalf("Close took %v, the whole connect timeout of the start it should have stopped", took)
	}
}

// TestServerThatCrashesAfterEveryStart: a server that lists its tools and
// then crashes, at every start, is started again in the background with
// the backoff, without waiting for a call; while a restart waits for the
// backoff its tools are withdrawn (Options.Changed), not offered as if it
// were up, and offered again by the start that lists them; its starts
// and log lines stay bounded, and Close stops it. Before, its tools stayed
// offered while it was down, it was started again only by calls, and
// nothing was logged.
func TestServerThatCrashesAfterEveryStart(t *testing.T) {
	dir := t.TempDir()
	var logs testenv.Buffer
	var changes changeLog
	const backoffMin, backoffMax = 20 * time.Millisecond, 2 * time.Second
	start := time.Now()
	set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"h": {Command: hostileBin, Args: []string{"brief", dir, "30"}}},
		Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Changed: changes.changed, backoffMin: backoffMin, backoffMax: backoffMax})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { set.Close() })
	const want = 8
	awaitStarts(t, dir, want)
	testenv.Eventually(t, 20*time.Second, func() bool {
		last, n := changes.last()
		tools, _ := set.Tools()
		return n >= 2 && len(last) == 0 && len(tools) == 0
	}, "the tools withdrawn while the server waits for its restart")
	srv := set.sessions["h"]
	if err := set.Close(); err != nil && !strings.Contains(err.Error(), "exit status 4") {
		t.Fatal(err)
	}
	elapsed, n := time.Since(start), starts(t, dir)
	// Each restart after the first waits for the backoff, which is
	// backoffMin at the least.
	if bound := 2 + int(elapsed/backoffMin); n > bound {
		t.Errorf("%d starts in %v, more than %d", n, elapsed, bound)
	}
	var offeredAgain, withdrawn int
	changes.mu.Lock()
	for _, c := range changes.changes {
		if len(c) == 0 {
			withdrawn++
		} else if slices.Equal(c, []string{"h__t"}) {
			offeredAgain++
		}
	}
	changes.mu.Unlock()
	if withdrawn == 0 || offeredAgain == 0 {
		t.Errorf("%d withdrawals, %d offers again, want both", withdrawn, offeredAgain)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	t.Logf("%d starts in %v: %d withdrawals, %d log lines", n, elapsed.Round(time.Millisecond), withdrawn, len(lines))
	// The first line that it is down; then the failures and the returns
	// at each power of two of the count of sessions that ended soon,
	// which is at most the starts.
	if bound := 1 + 2*bits.Len(uint(n)); len(lines) < 2 || len(lines) > bound {
		t.Errorf("%d log lines over %d starts, want 2 to %d:\n%s", len(lines), n, bound, logs.String())
	}
	if !strings.Contains(lines[0], "MCP server is down") || !strings.Contains(logs.String(), "offers its tools again") {
		t.Errorf("log:\n%s", logs.String())
	}
	srv.mu.Lock()
	retrying := srv.retrying
	srv.mu.Unlock()
	if retrying {
		t.Error("still retrying after Close")
	}
	if got := starts(t, dir); got != n {
		t.Errorf("%d starts after Close returned, want none", got-n)
	}
}

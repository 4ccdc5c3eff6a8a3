package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// rlo is the right-to-left override: raw, it shows "rm\u202efdp.tad" as
// "rmdat.pdf" and turns the text after it around.
const rlo = "\u202e"

// fakeNode is what fakeAPI's conversations are, and whether it answers.
type fakeNode struct {
	mu    sync.Mutex
	convs []string      // newest first
	seq   int64         // the hot tier's newest record
	woken chan struct{} // closed when seq grows
	down  bool          // every /v1 request is cut, as when the node is stopped
	cut   chan struct{} // closed when the node goes down: held long polls are cut
}

// chat stores a message of conversation id, as a chat from another client
// does: the conversation goes first and a long poll of the hot tier wakes.
func (f *fakeNode) chat(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.convs = append([]string{id}, slices.DeleteFunc(f.convs, func(c string) bool { return c == id })...)
	f.seq++
	close(f.woken)
	f.woken = make(chan struct{})
}

func (f *fakeNode) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	if down {
		close(f.cut)
	} else {
		f.cut = make(chan struct{})
	}
}

// hangUp closes the request's connection unanswered.
func hangUp(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		c.Close()
	}
}

// fakeAPI answers the few /v1 calls the fleet and chat views make: an
// agent whose capability line, tool name and description hold hidden
// characters; a chat whose stream ends, as when the node dies, after a
// failed model call and with a tool call running, without its answer;
// the conversation conv-1 that chat names, with one message; the hot
// tier's long poll of messages; and an empty answer for the rest. While
// the node is down, every /v1 request's connection is closed unanswered.
func fakeAPI(t *testing.T) (http.Handler, *fakeNode) {
	node := &fakeNode{convs: []string{"conv-1"}, woken: make(chan struct{}), cut: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", New())
	mux.Handle("GET "+Prefix, New())
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			t.Error(err)
		}
	}
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		write(w, map[string]any{"node_id": "n1", "ready": map[string]any{"ready": true}})
	})
	mux.HandleFunc("GET /v1/agents", func(w http.ResponseWriter, _ *http.Request) {
		tool := map[string]any{"name": "rm" + rlo + "fdp.tad", "description": "after the name", "parameters": map[string]any{},
			"permissions": []string{}, "stats": map[string]any{"calls": 0, "errors": 0, "timeouts": 0, "avg_ms": 0, "max_ms": 0}}
		write(w, map[string]any{"agents": []any{map[string]any{"id": "pi1", "online": true, "capabilities": "Pi " + rlo + "4 ipR\x1b[31m",
			"last_seen": time.Now().Format(time.RFC3339Nano), "tools": []any{tool}},
			map[string]any{"id": "pi2", "online": true, "capabilities": "garage", "last_seen": time.Now().Format(time.RFC3339Nano), "tools": []any{},
				"not_recording": "its disk is full: 12 KiB free\x1b[2J"}}})
	})
	mux.HandleFunc("POST /v1/chat", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []struct {
			name string
			data any
		}{
			{"conversation", map[string]string{"conversation_id": "conv-1"}},
			{"progress", map[string]any{"kind": "llm_start", "iteration": 0}},
			{"progress", map[string]any{"kind": "llm_end", "status": "error", "error_type": "upstream_error", "error": "upstream exploded", "elapsed_ms": 7}},
			{"progress", map[string]any{"kind": "llm_start", "iteration": 0}},
			{"progress", map[string]any{"kind": "llm_end", "status": "success", "elapsed_ms": 5}},
			{"progress", map[string]any{"kind": "tool_start", "call_id": "c1", "agent": "pi1", "tool": "bash", "args": "{}"}},
			{"progress", map[string]any{"kind": "tool_output", "call_id": "c1", "output": "tick 1\n"}},
		} {
			b, err := json.Marshal(e.data)
			if err != nil {
				t.Error(err)
			}
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, b)
		}
	})
	mux.HandleFunc("GET /v1/conversations", func(w http.ResponseWriter, _ *http.Request) {
		node.mu.Lock()
		var convs []any
		for _, id := range node.convs {
			convs = append(convs, map[string]any{"id": id, "message_count": 1, "last_time": time.Now().Format(time.RFC3339Nano)})
		}
		node.mu.Unlock()
		write(w, map[string]any{"conversations": convs})
	})
	mux.HandleFunc("GET /v1/logs", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		node.mu.Lock()
		seq, woken, cut := node.seq, node.woken, node.cut
		node.mu.Unlock()
		if r.URL.Query().Has("wait") && seq <= after {
			select {
			case <-woken:
			case <-cut:
				hangUp(w)
				return
			case <-r.Context().Done():
				return
			case <-time.After(25 * time.Second):
			}
			node.mu.Lock()
			seq = node.seq
			node.mu.Unlock()
		}
		entries := []any{}
		if seq > after {
			entries = append(entries, map[string]any{"seq": seq, "kind": "message"})
		}
		write(w, map[string]any{"entries": entries, "head": seq})
	})
	mux.HandleFunc("GET /v1/conversations/conv-1/messages", func(w http.ResponseWriter, _ *http.Request) {
		write(w, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "remembered"}}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "{}", http.StatusNotFound) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		node.mu.Lock()
		down := node.down
		node.mu.Unlock()
		if down && strings.HasPrefix(r.URL.Path, "/v1/") {
			hangUp(w)
			return
		}
		mux.ServeHTTP(w, r)
	}), node
}

// TestConsolePage opens the console, served with a fake API, in headless
// Chromium: the subtests share the browser and run in order.
func TestConsolePage(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: not in -short")
	}
	chromium := testenv.Find(t, "chromium", "chromium")
	api, node := fakeAPI(t)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)

	profile, err := os.MkdirTemp("", "evoclaw-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Chromium's helpers may write into the profile for a moment after it
	// ends: removal is best effort.
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(profile))
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	var mu sync.Mutex // guards thrown
	var thrown []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if ev, ok := ev.(*runtime.EventExceptionThrown); ok {
			e := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				e += " " + ev.ExceptionDetails.Exception.Description
			}
			mu.Lock()
			thrown = append(thrown, e)
			mu.Unlock()
		}
	})
	if err := chromedp.Run(ctx, runtime.Enable()); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Run(c, actions...); err != nil {
			t.Fatalf("%s: %v (exceptions: %v)", what, err, thrown)
		}
	}

	// text shown as written: text with a bidi override, control characters
	// or tag characters is shown with those written as escapes (as `evoclaw
	// audit sql` prints them), joiners and line breaks stay, so that nothing
	// an agent or a model sends reads other than what it holds; and a
	// fragment naming what every object has (#constructor) opens the fleet
	// instead of breaking the page.
	run("sign in", chromedp.Navigate(srv.URL+"/#constructor"), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", "any-token-will-do", chromedp.ByID), chromedp.Click("#login-submit", chromedp.ByID),
		chromedp.WaitVisible(`[data-agent="pi1"] [data-tool]`))
	var got map[string]string
	run("read the page", chromedp.Evaluate(`(async () => {
		const dom = await import("/ui/dom.js");
		const p = dom.el("p", { text: "a\u202eb\x1bc\u200dd\ne\tf\u{E0041}g\u0085h", title: "t\u202e" }, " x\u2066y");
		const s = document.createElement("span");
		dom.setText(s, "rm\u202efdp.tad");
		return { text: p.textContent, title: p.title, set: s.textContent,
			svg: dom.svg("text", { text: "\u200fz" }).textContent,
			caps: document.querySelector('[data-agent="pi1"] .caps').textContent,
			summary: document.querySelector('[data-agent="pi1"] summary').textContent,
			norec: document.querySelector('[data-agent="pi2"] .norec').textContent,
			norec2: document.querySelector('[data-agent="pi2"] .pill').textContent,
			norec1: String(document.querySelector('[data-agent="pi1"] .norec').hidden),
			hash: location.hash };
	})()`, &got, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	for k, want := range map[string]string{
		"text":    `a\u202eb\x1bc` + "\u200dd\ne\tf" + `\U000e0041g\u0085h x\u2066y`,
		"title":   `t\u202e`,
		"set":     `rm\u202efdp.tad`,
		"svg":     `\u200fz`,
		"caps":    `Pi \u202e4 ipR\x1b[31m`,
		"summary": `rm\u202efdp.tad after the name`,
		// An agent whose trail cannot write says so, as text; one that can does not.
		"norec":  `Not recording: its disk is full: 12 KiB free\x1b[2J. It refuses every command until its audit trail can write.`,
		"norec2": "online, not recording",
		"norec1": "true",
		"hash":   "#fleet",
	} {
		if got[k] != want {
			t.Errorf("%s shown as %q, want %q", k, got[k], want)
		}
	}
	for k, v := range got {
		if strings.ContainsRune(v, []rune(rlo)[0]) {
			t.Errorf("%s holds a raw right-to-left override: %q", k, v)
		}
	}

	// A chat whose stream ends without its answer says so, and a call
	// still running when it ended is not left shown as running; a failed
	// model call reads as a failure, not as an answer.
	run("chat", chromedp.Click(`#tabs [data-view="chat"]`), chromedp.WaitVisible("#chat-text", chromedp.ByID),
		chromedp.SendKeys("#chat-text", "how is pi1?", chromedp.ByID), chromedp.Click("#chat-send", chromedp.ByID),
		chromedp.WaitVisible("#chat-log .msg.error"))
	var chat map[string]string
	evalJS := func(what, js string, v any) {
		t.Helper()
		run(what, chromedp.Evaluate(js, v))
	}
	evalJS("read the chat", `({
		error: document.querySelector("#chat-log .msg.error").textContent,
		tool: document.querySelector('#chat-log [data-call="c1"] .pill').textContent,
		llm: document.querySelector("#chat-log .step.llm").textContent,
		llmClass: document.querySelector("#chat-log .step.llm").className,
		hash: location.hash,
	})`, &chat)
	for k, want := range map[string]string{
		"error":    "Chat failed: the node ended the chat without its answer (it may have stopped or restarted)",
		"tool":     "not finished",
		"llm":      "the model failed after 7 ms: upstream exploded",
		"llmClass": "step llm failed",
		"hash":     "#chat/conv-1",
	} {
		if chat[k] != want {
			t.Errorf("chat: %s is %q, want %q", k, chat[k], want)
		}
	}

	// A reload shows the conversation that was open; Back returns to the
	// view before.
	run("reload", chromedp.Reload(), chromedp.WaitVisible("#chat-log .msg.user"))
	var title, hash string
	evalJS("title", `document.getElementById("chat-title").textContent + " " + document.querySelector("#chat-log .msg.user p").textContent`, &title)
	if title != "conv-1 remembered" {
		t.Errorf("after a reload the chat shows %q, want conv-1 and its message", title)
	}
	run("fleet, then back", chromedp.Click(`#tabs [data-view="fleet"]`), chromedp.WaitVisible("#view-fleet", chromedp.ByID),
		chromedp.NavigateBack(), chromedp.WaitVisible("#view-chat", chromedp.ByID))
	evalJS("hash", `location.hash`, &hash)
	if hash != "#chat/conv-1" {
		t.Errorf("Back from the fleet went to %q, want #chat/conv-1", hash)
	}

	// The list is live: a chat from another client (another tab,
	// `evoclaw chat`) shows without a reload. While the node is down the
	// list is kept and says the node is unreachable; the page tries again
	// less and less often, not in a flood; when the node is back, the list
	// shows what changed meanwhile, without a reload. The list once
	// changed only on a reload or this tab's own chat, and after a failed
	// read said "Failed to fetch" until a reload.
	node.chat("conv-2")
	run("another client's chat", chromedp.WaitVisible(`#chat-list [data-conv="conv-2"]`))
	var n int
	evalJS("count failed polls", `(() => { window.__failed = []; const f = window.fetch;
		window.fetch = (u, o) => f(u, o).catch((e) => {
			if (String(u).startsWith("/v1/logs")) window.__failed.push(performance.now());
			throw e; });
		return 0; })()`, &n)
	node.setDown(true)
	run("node down", chromedp.WaitVisible("#chat-list-state", chromedp.ByID))
	var gaps []float64
	testenv.Eventually(t, 20*time.Second, func() bool {
		evalJS("read failed polls", `window.__failed.slice(1).map((t, i) => t - window.__failed[i])`, &gaps)
		return len(gaps) >= 1
	}, "a retry while the node is down")
	var down map[string]string
	evalJS("read the list", `({ state: document.getElementById("chat-list-state").textContent,
		list: [...document.querySelectorAll("#chat-list [data-conv]")].map((b) => b.dataset.conv).join(" ") })`, &down)
	if !strings.HasPrefix(down["state"], "The node is unreachable (") || down["list"] != "conv-2 conv-1" {
		t.Errorf("while the node is down the list shows %q", down)
	}
	// The first retry after the long poll was cut waits 1 s (a lower
	// bound: a slow machine only adds to it), the next 2 s, and so on.
	if gaps[0] < 900 {
		t.Errorf("the page tried again %.0f ms after a failure, want at least 1000", gaps[0])
	}
	node.chat("conv-3")
	node.setDown(false)
	run("node back", chromedp.WaitVisible(`#chat-list [data-conv="conv-3"]`), chromedp.WaitNotVisible("#chat-list-state", chromedp.ByID))

	mu.Lock()
	defer mu.Unlock()
	for _, e := range thrown {
		t.Errorf("the page threw: %s", e)
	}
}

package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
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

// fakeAPI answers the few /v1 calls the fleet view makes, with an agent
// whose capability line, tool name and description hold hidden
// characters, and an empty answer for the rest.
func fakeAPI(t *testing.T) http.Handler {
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
			"last_seen": time.Now().Format(time.RFC3339Nano), "tools": []any{tool}}}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "{}", http.StatusNotFound) })
	return mux
}

// TestTextShownAsWritten opens the console in headless Chromium: text with
// a bidi override, control characters or tag characters is shown with
// those written as escapes (as `evoclaw audit sql` prints them), joiners
// and line breaks stay, so that nothing an agent or a model sends reads
// other than what it holds; and a fragment naming what every object has
// (#constructor) opens the fleet instead of breaking the page.
func TestTextShownAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: not in -short")
	}
	chromium := testenv.Find(t, "chromium", "chromium")
	srv := httptest.NewServer(fakeAPI(t))
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
			hash: location.hash };
	})()`, &got, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	for k, want := range map[string]string{
		"text":    `a\u202eb\x1bc` + "\u200dd\ne\tf" + `\U000e0041g\u0085h x\u2066y`,
		"title":   `t\u202e`,
		"set":     `rm\u202efdp.tad`,
		"svg":     `\u200fz`,
		"caps":    `Pi \u202e4 ipR\x1b[31m`,
		"summary": `rm\u202efdp.tad after the name`,
		"hash":    "#fleet",
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
	mu.Lock()
	defer mu.Unlock()
	for _, e := range thrown {
		t.Errorf("the page threw: %s", e)
	}
}

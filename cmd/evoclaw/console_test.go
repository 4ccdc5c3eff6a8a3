package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// hostileCaps is the capability line of the console test's agent: markup
// that would run script if the page ever parsed it as HTML, and a
// right-to-left override that would show "txt.exe" as "exe.txt".
const hostileCaps = `Pi 4 <script>window.__pwned="script"</script><img src=x onerror="window.__pwned='img'"> ` + "\u202etxt.exe"

// consoleTranscript: the first chat says what it does (with markup) and
// runs a bash loop that streams its output (and prints markup), the
// answer carries markup too; the second
// asks the person a question; the third runs a long command, which the
// test cancels.
const consoleTranscript = `{"name":"console","turns":[
  {"content":"Checking <img src=x onerror=window.__pwned='said'>pi1.","tool_calls":[{"id":"c1","name":"pi1__bash","arguments":{"command":"for i in 1 2 3; do echo step $i; sleep 0.3; done; echo '<script>window.__pwned=\"tool\"</script>'","timeout_ms":20000}}]},
  {"content":"<b>bold?</b> pi1 said: {{result c1}}"},
  {"content":"","tool_calls":[{"id":"q1","name":"question","arguments":{"question":"Which pump <i>now</i>?"}}]},
  {"content":"you chose: {{result q1}}"},
  {"content":"","tool_calls":[{"id":"c2","name":"pi1__bash","arguments":{"command":"echo waiting; sleep 20","timeout_ms":30000}}]},
  {"content":"never reached"}]}`

// TestConsoleInBrowser drives the web console in headless Chromium against
// a real `evoclaw serve` (scripted LLM) and a real `evoclaw edge`: sign in,
// the agent online with its tools, a streamed chat, a canceled chat, the
// audit page (verify, live feed, a report, a refused write), the metrics
// charts, then the agent killed and shown offline; injected markup stays
// text throughout. Screenshots go to $EVOCLAW_ARTIFACTS (else a temp dir).
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: not in -short")
	}
	chromium := testenv.Find(t, "chromium", "chromium")
	shots := os.Getenv("EVOCLAW_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "node")
	broker := startScriptedServe(t, dir, "console-test", consoleTranscript)
	agent, _ := startProc(t, procSpec{}, "edge", "--config", writeDemoAgent(t, dir, broker, hostileCaps,
		fmt.Sprintf("permissions = [\"file_read\", \"shell\"]\n[builtin]\ngroups = [\"coding\"]\nworkspace = %q\n", t.TempDir())))

	base := strings.TrimSpace(readTestFile(t, filepath.Join(data, orchestrator.HTTPAddrFile)))
	token := strings.TrimSpace(readTestFile(t, filepath.Join(data, orchestrator.HTTPTokenFile)))

	b := newBrowser(t, chromium)
	shot := func(name string) {
		t.Helper()
		var png []byte
		b.run(t, "screenshot "+name, chromedp.FullScreenshot(&png, 100))
		if err := os.WriteFile(filepath.Join(shots, "console-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Sign in: a wrong token is refused, the right one opens the fleet.
	b.run(t, "open", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#token", chromedp.ByID))
	b.run(t, "wrong token", chromedp.SendKeys("#token", "not-the-token-0000", chromedp.ByID), chromedp.Click("#login-submit", chromedp.ByID))
	b.waitText(t, "#login-error", "Wrong token")
	b.setValue(t, "#token", "")
	b.run(t, "sign in", chromedp.SendKeys("#token", token, chromedp.ByID),
		chromedp.Click("#login-submit", chromedp.ByID), chromedp.WaitVisible("#view-fleet", chromedp.ByID))
	if b.eval(t, `location.href`).(string) != base+"/#fleet" {
		t.Fatal("the token went into the URL or the page did not open the fleet")
	}

	// Fleet: pi1 online, its tools with schema, permissions and timeout;
	// the hostile capability line is text.
	b.run(t, "agent online", chromedp.WaitVisible(`[data-agent="pi1"][data-online="true"] [data-tool="disk_usage"]`))
	if caps, want := b.eval(t, `document.querySelector('[data-agent="pi1"] .caps').textContent`), strings.ReplaceAll(hostileCaps, "\u202e", `\u202e`); caps != want {
		t.Fatalf("capability line shown as %q, want the text with its override escaped, %q", caps, want)
	}
	du := b.eval(t, `document.querySelector('[data-agent="pi1"] [data-tool="disk_usage"]').textContent`).(string)
	for _, want := range []string{"file_read", "5000 ms", `"required": [`, `"path"`} {
		if !strings.Contains(du, want) {
			t.Errorf("disk_usage details lack %q: %s", want, du)
		}
	}
	b.run(t, "open a tool", chromedp.Click(`[data-agent="pi1"] [data-tool="disk_usage"] summary`))
	// Who answers the chats is in the header: here the scripted player,
	// which says it is not a language model (it once said so only in
	// evoclaw status, and the console's answers passed for a model's).
	if got := b.eval(t, `document.querySelector('#node-llm').hidden ? "" : document.querySelector('#node-llm').textContent`).(string); !strings.HasPrefix(got, "answers: scripted") ||
		!strings.Contains(got, "not a language model") {
		t.Errorf("the header says %q of who answers, want the scripted player's label", got)
	}
	shot("fleet")

	// A second tab on the chat page, to see the first tab's chat listed
	// there as it runs, without a reload.
	tab, closeTab := chromedp.NewContext(b.ctx)
	defer closeTab()
	if err := chromedp.Run(tab); err != nil { // the tab lives as long as this context
		t.Fatal(err)
	}
	inTab := func(what string, actions ...chromedp.Action) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, 20*time.Second)
		defer cancel()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("second tab: %s: %v", what, err)
		}
	}
	inTab("sign in", chromedp.Navigate(base+"/#chat"), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", token, chromedp.ByID), chromedp.Click("#login-submit", chromedp.ByID),
		chromedp.WaitReady("#chat-list li", chromedp.ByQuery))

	// Chat: the tool's streamed output, then the answer, markup as text.
	b.run(t, "chat tab", chromedp.Click(`#tabs [data-view="chat"]`), chromedp.WaitVisible("#chat-text", chromedp.ByID),
		chromedp.SendKeys("#chat-text", "How is pi1?", chromedp.ByID), chromedp.Click("#chat-send", chromedp.ByID))
	b.waitText(t, `#chat-log .step.tool .output`, "step 1")
	b.run(t, "answer", chromedp.WaitVisible(`#chat-log .msg.answer`))
	answer := b.eval(t, `document.querySelector('#chat-log .msg.answer p').textContent`).(string)
	if !strings.HasPrefix(answer, "<b>bold?</b> pi1 said: step 1\nstep 2\nstep 3\n<script>") {
		t.Fatalf("answer shown as %q", answer)
	}
	// What the model wrote beside its call is shown, as text.
	if said := b.eval(t, `document.querySelector('#chat-log .step.said').textContent`).(string); said != "Checking <img src=x onerror=window.__pwned='said'>pi1." {
		t.Errorf("the model's words beside its call shown as %q", said)
	}
	step := b.eval(t, `document.querySelector('#chat-log .step.tool').textContent`).(string)
	for _, want := range []string{"ok", "pi1", "bash", "step 3"} {
		if !strings.Contains(step, want) {
			t.Errorf("tool step lacks %q: %q", want, step)
		}
	}
	conv := b.eval(t, `document.getElementById('chat-title').textContent`).(string)
	b.run(t, "listed", chromedp.WaitVisible(fmt.Sprintf(`#chat-list [data-conv=%q]`, conv)))
	inTab("listed in the second tab", chromedp.WaitReady(fmt.Sprintf(`#chat-list [data-conv=%q]`, conv)))
	closeTab()
	shot("chat")

	// A question: the page shows it as text with a reply form, the reply
	// resumes the loop and the model's answer carries it.
	b.run(t, "question chat", chromedp.SendKeys("#chat-text", "Ask me", chromedp.ByID), chromedp.Click("#chat-send", chromedp.ByID))
	b.run(t, "question shown", chromedp.WaitVisible(`#chat-log .step.question .reply`))
	b.waitText(t, `#chat-log .step.question .asked`, "Which pump <i>now</i>?")
	b.run(t, "reply", chromedp.SendKeys(`#chat-log .step.question .reply`, "pump 2"),
		chromedp.Click(`#chat-log .step.question button`))
	b.waitText(t, `#chat-log .step.question .state`, "You replied: pump 2")
	b.waitText(t, `#chat-log .msg.answer:last-of-type p`, "you chose: pump 2")
	shot("question")

	// Cancel a running chat: the page says so and the node lets go of the
	// agent's call.
	b.run(t, "long chat", chromedp.SendKeys("#chat-text", "Wait for it", chromedp.ByID), chromedp.Click("#chat-send", chromedp.ByID))
	b.waitText(t, `#chat-log .step.tool:last-of-type .output`, "waiting")
	if n := inFlight(t, base, token, "pi1"); n != 1 {
		t.Fatalf("pi1 has %d calls in flight during the long chat, want 1", n)
	}
	b.run(t, "cancel", chromedp.Click("#chat-cancel", chromedp.ByID), chromedp.WaitVisible(`#chat-log .msg.canceled`))
	testenv.Eventually(t, 10*time.Second, func() bool { return inFlight(t, base, token, "pi1") == 0 }, "the canceled call to leave pi1")

	// Audit: verification, the live feed and its filter, a report, a
	// refused write.
	b.run(t, "audit tab", chromedp.Click(`#tabs [data-view="audit"]`))
	b.waitText(t, "#verify-result", "intact")
	b.run(t, "feed", chromedp.WaitVisible(`#feed tbody tr`))
	b.run(t, "filter", chromedp.SendKeys("#feed-tool", "no-such-tool", chromedp.ByID))
	if n := b.eval(t, `document.querySelectorAll('#feed tbody tr').length`); n != 0.0 {
		t.Fatalf("filter left %v rows", n)
	}
	b.setValue(t, "#feed-tool", "")
	b.setValue(t, "#sql-text", "DELETE FROM tool_calls")
	b.run(t, "write refused", chromedp.Click("#sql-run", chromedp.ByID), chromedp.WaitVisible("#sql-state.refused"))
	b.waitText(t, "#sql-state", "Refused")
	b.setValue(t, "#sql-report", "tools")
	b.run(t, "report", chromedp.Click("#sql-run", chromedp.ByID), chromedp.WaitVisible(`#sql-result tbody tr`))
	b.waitText(t, "#sql-result tbody", "bash")
	shot("audit")

	// Metrics: charts drawn from samples of /v1/status.
	b.run(t, "metrics tab", chromedp.Click(`#tabs [data-view="metrics"]`), chromedp.WaitVisible(`#charts svg polyline`))
	if n := b.eval(t, `document.querySelectorAll('#charts svg').length`); n != 4.0 {
		t.Fatalf("%v charts, want 4", n)
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		calls := b.eval(t, `(() => { const r = [...document.querySelectorAll('#metrics-table tbody tr')].find((r) => r.cells[1].textContent === 'bash');
			return r ? Number(r.cells[2].textContent) : 0; })()`)
		return calls.(float64) >= 1
	}, "the metrics table to count pi1's bash call")
	shot("metrics")

	// Kill the agent: the fleet shows it offline.
	b.run(t, "fleet tab", chromedp.Click(`#tabs [data-view="fleet"]`), chromedp.WaitVisible(`[data-agent="pi1"][data-online="true"]`))
	killed := time.Now()
	agent.kill()
	b.run(t, "agent offline", chromedp.WaitVisible(`[data-agent="pi1"][data-online="false"]`))
	t.Logf("offline shown %s after the kill", time.Since(killed).Round(time.Millisecond))
	if took := time.Since(killed); took > 5*time.Second {
		t.Errorf("offline shown %s after the kill", took)
	}
	shot("fleet-offline")

	// A 360-pixel-wide screen: nothing overflows sideways.
	b.run(t, "narrow", emulation.SetDeviceMetricsOverride(360, 740, 2, true))
	for _, view := range []string{"fleet", "chat", "audit", "metrics"} {
		b.run(t, view, chromedp.Click(fmt.Sprintf(`#tabs [data-view=%q]`, view)), chromedp.Sleep(200*time.Millisecond))
		if w := b.eval(t, `document.documentElement.scrollWidth`); w.(float64) > 360 {
			t.Errorf("%s is %v px wide on a 360 px screen", view, w)
		}
	}
	b.run(t, "fleet narrow", chromedp.Click(`#tabs [data-view="fleet"]`))
	shot("fleet-360")

	if p := b.eval(t, `window.__pwned === undefined ? "" : String(window.__pwned)`); p != "" {
		t.Fatalf("injected markup ran: window.__pwned = %v", p)
	}
	b.checkClean(t)
	t.Logf("screenshots in %s", shots)
}

// inFlight reads pi1's in-flight count from GET /v1/agents.
func inFlight(t *testing.T, base, token, agent string) int64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/agents", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l orchestrator.AgentList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	for _, a := range l.Agents {
		if a.ID == agent {
			return a.InFlight
		}
	}
	return -1
}

// browser is one headless Chromium with a fresh profile, and what its pages
// reported: exceptions and console or CSP errors.
type browser struct {
	ctx context.Context

	mu       sync.Mutex // guards problems
	problems []string
}

func newBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	// The profile is not t.TempDir: Chromium's helper processes may still
	// write into it for a moment after the browser is gone, which made
	// TempDir's own removal fail the test.
	profile, err := os.MkdirTemp("", "evoclaw-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeSettled(t, profile) })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	b := &browser{ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		var p string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			p = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				p += " " + ev.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			// CSP violations and failed loads are reported here. The
			// 401 of the wrong token and 403 of the refused write are the
			// test's own doing.
			if ev.Entry.Level == cdplog.LevelError && !strings.Contains(ev.Entry.Text, "401") && !strings.Contains(ev.Entry.Text, "403") {
				p = "log: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if p != "" {
			b.mu.Lock()
			b.problems = append(b.problems, p)
			b.mu.Unlock()
		}
	})
	// The first Run starts the browser, which lives as long as the context
	// it runs on: this one, not a timeout derived from it.
	if err := chromedp.Run(ctx, cdplog.Enable(), runtime.Enable()); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// run runs actions, failing the test after 20 s.
func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var html string
		_ = chromedp.Run(b.ctx, chromedp.OuterHTML("main", &html, chromedp.ByQuery))
		t.Fatalf("%s: %v\nproblems: %v\npage:\n%.4000s", what, err, b.problems, html)
	}
}

// eval evaluates a JavaScript expression and returns its value.
func (b *browser) eval(t *testing.T, expr string) any {
	t.Helper()
	var v any
	b.run(t, "evaluate "+expr, chromedp.Evaluate(expr, &v))
	return v
}

// setValue sets the value of the form field matching sel as typing or
// picking would, with its input and change events.
func (b *browser) setValue(t *testing.T, sel, value string) {
	t.Helper()
	v, _ := json.Marshal(value)
	b.eval(t, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %s;
		e.dispatchEvent(new Event('input')); e.dispatchEvent(new Event('change')); return true; })()`, sel, v))
}

// waitText waits until the text of the first element matching sel contains
// want.
func (b *browser) waitText(t *testing.T, sel, want string) {
	t.Helper()
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.textContent : ""; })()`, sel)
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got, _ = b.eval(t, expr).(string); strings.Contains(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: text %q, want it to contain %q; problems: %v", sel, got, want, b.problems)
}

// checkClean fails the test on any exception or error the page logged.
func (b *browser) checkClean(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("browser reported %s", p)
	}
}

// removeSettled removes dir, trying again for up to 5 s while something
// still writes into it; what is left then is logged, not failed.
func removeSettled(t *testing.T, dir string) {
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
	}
	t.Logf("browser profile %s left behind: %v", dir, err)
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

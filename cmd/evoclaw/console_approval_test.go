package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// approvalTail ends the first call's arguments past the 200 bytes its
// progress events carry: the row waiting for approval must show it.
const approvalTail = "approval-tail-past-200-bytes"

// approvalTranscript: two chats, each calling pi1's bash, which a rule
// holds for a person's approval; the first is approved, the second denied.
// The first command is long: a comment, then approvalTail.
var approvalTranscript = `{"name":"console-approval","turns":[
  {"content":"","tool_calls":[{"id":"a1","name":"pi1__bash","arguments":{"command":"echo approved-run # ` + strings.Repeat("x", 220) + ` ` + approvalTail + `","timeout_ms":20000}}]},
  {"content":"first: {{result a1}}"},
  {"content":"","tool_calls":[{"id":"a2","name":"pi1__bash","arguments":{"command":"echo never-run","timeout_ms":20000}}]},
  {"content":"second: {{result a2}}"}]}`

// approvalMarkup is a tool name in the approval rule that would run script
// if the console showed the rule as markup.
const approvalMarkup = `<img src=x onerror="window.__pwned='approval'">`

// TestConsoleApprovalInBrowser: a tool call held for approval shows on its
// row in the console's chat, with the id the approvals API lists and the
// commands that decide it, instead of a chat that looks hung until the
// approval times out; approved, the row finishes and the answer comes;
// denied, the row ends with the denial and the tool never runs. The rule
// quoted in the notice stays text. The notice shows the call's arguments
// whole, as the approval keeps them: the call's progress line cuts them at
// 200 bytes, and what the person approves could end past that, unseen.
func TestConsoleApprovalInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: not in -short")
	}
	// The rule's second tool name is markup: the notice quotes the rule.
	b, base, token := consoleChatWithShell(t, "approval-test", approvalTranscript,
		"[approvals]\ntimeout = \"60s\"\n[[approvals.rules]]\ntools = [\"pi1__bash\", "+fmt.Sprintf("%q", approvalMarkup)+"]\n")

	for _, tc := range []struct {
		call, prompt, decision string
		// pill is the class the row's status ends with, shown what its
		// output and result then hold, answer what the answer starts with.
		pill, shown, answer string
	}{
		{"a1", "run it", "approve", "ok", "approved-run", "first: approved-run"},
		{"a2", "run it again", "deny", "bad", "approval_denied: denied by console-test", "second: "},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			answers := int(b.eval(t, `document.querySelectorAll('#chat-log .msg.answer').length`).(float64))
			b.run(t, "send", chromedp.SendKeys("#chat-text", tc.prompt, chromedp.ByID), chromedp.Click("#chat-send", chromedp.ByID))
			id := pendingApproval(t, base, token)
			row := fmt.Sprintf(`document.querySelector('#chat-log .step.tool[data-call=%q]')`, tc.call)
			shown := row + `.querySelector('.output').textContent + '|' + ` + row + `.querySelector('.result').textContent`
			b.waitTrue(t, fmt.Sprintf(`!!%s && %s.querySelector('.pill').textContent === 'approval'`, row, row))
			if tc.call == "a1" {
				// The arguments in full: the progress line cuts them at 200 bytes.
				b.waitTrue(t, fmt.Sprintf(`%s.querySelector('.result').textContent.includes('\narguments: {"command":"echo approved-run # x') &&
					%s.querySelector('.result').textContent.includes(%q)`, row, row, approvalTail))
			}
			result := b.eval(t, row+`.querySelector('.result').textContent`).(string)
			for _, want := range []string{"waiting for approval " + id, "evoclaw approvals approve " + id, approvalMarkup} {
				if !strings.Contains(result, want) {
					t.Errorf("the waiting row says %q, want it to contain %q", result, want)
				}
			}
			if n := int(b.eval(t, `document.querySelectorAll('#chat-log .msg.answer').length`).(float64)); n != answers {
				t.Fatalf("%d answers while the call waits, want %d", n, answers)
			}
			decide(t, base, token, id, tc.decision)
			b.waitTrue(t, fmt.Sprintf(`%s.querySelector('.pill').classList.contains(%q)`, row, tc.pill))
			b.waitTrue(t, fmt.Sprintf(`(%s).includes(%q)`, shown, tc.shown))
			if got := b.eval(t, shown).(string); strings.Contains(got, "waiting for approval") {
				t.Errorf("the row still says it waits after the %s: %q", tc.decision, got)
			}
			b.waitTrue(t, fmt.Sprintf(`document.querySelectorAll('#chat-log .msg.answer').length > %d`, answers))
			last := b.eval(t, `[...document.querySelectorAll('#chat-log .msg.answer p')].pop().textContent`).(string)
			if !strings.HasPrefix(last, tc.answer) {
				t.Errorf("answer %q, want it to start with %q", last, tc.answer)
			}
			if tc.decision == "deny" && strings.Contains(last, "never-run") {
				t.Errorf("the denied command ran: %q", last)
			}
		})
	}
	if p := b.eval(t, `window.__pwned === undefined ? "" : String(window.__pwned)`); p != "" {
		t.Fatalf("the rule's markup ran: window.__pwned = %v", p)
	}
	b.checkClean(t)
}

// consoleChatWithShell starts `evoclaw serve` (node nodeID, the scripted
// model playing transcript, the lines of tail in its evoclaw.toml) and the
// agent pi1 with the shell (bash), and signs a headless Chromium in to the
// console's chat with pi1 online. It returns the browser, the node's API
// address and its token; the test skips without chromium.
func consoleChatWithShell(t *testing.T, nodeID, transcript, tail string) (*browser, string, string) {
	t.Helper()
	chromium := testenv.Find(t, "chromium", "chromium")
	dir := t.TempDir()
	data := filepath.Join(dir, "node")
	broker := startScriptedServeWith(t, dir, nodeID, transcript, tail)
	startProc(t, procSpec{}, "edge", "--config", writeDemoAgent(t, dir, broker, nodeID+" agent",
		fmt.Sprintf("permissions = [\"shell\"]\n[builtin]\ngroups = [\"coding\"]\nworkspace = %q\n", t.TempDir())))
	base := strings.TrimSpace(readTestFile(t, filepath.Join(data, orchestrator.HTTPAddrFile)))
	token := strings.TrimSpace(readTestFile(t, filepath.Join(data, orchestrator.HTTPTokenFile)))

	b := newBrowser(t, chromium)
	b.run(t, "sign in", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#token", chromedp.ByID),
		chromedp.SendKeys("#token", token, chromedp.ByID), chromedp.Click("#login-submit", chromedp.ByID),
		chromedp.WaitVisible(`[data-agent="pi1"][data-online="true"]`))
	b.run(t, "chat tab", chromedp.Click(`#tabs [data-view="chat"]`), chromedp.WaitVisible("#chat-text", chromedp.ByID))
	return b, base, token
}

// pendingApproval waits for the one pending approval the node lists and
// returns its id.
func pendingApproval(t *testing.T, base, token string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var l orchestrator.ApprovalsPage
		if code := apiJSON(t, http.MethodGet, base+"/v1/approvals?state=pending", token, nil, &l); code != http.StatusOK {
			t.Fatalf("list approvals: status %d", code)
		}
		if len(l.Approvals) == 1 {
			return l.Approvals[0].ID
		}
		if len(l.Approvals) > 1 {
			t.Fatalf("%d pending approvals, want one", len(l.Approvals))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no approval pending after 20s")
	return ""
}

// decide approves or denies approval id through the API.
func decide(t *testing.T, base, token, id, decision string) {
	t.Helper()
	if code := apiJSON(t, http.MethodPost, base+"/v1/approvals/"+id+"/"+decision, token, orchestrator.DecisionRequest{By: "console-test"}, nil); code != http.StatusOK {
		t.Fatalf("%s %s: status %d", decision, id, code)
	}
}

// apiJSON sends body (when not nil) as JSON with token and decodes a 200's
// body into out (when not nil); it returns the status.
func apiJSON(t *testing.T, method, url, token string, body, out any) int {
	t.Helper()
	var rd bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&rd).Encode(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, url, &rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// waitTrue waits until the JavaScript expression expr is true.
func (b *browser) waitTrue(t *testing.T, expr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ok, _ := b.eval(t, expr).(bool); ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("still false after 20s: %s; problems: %v", expr, b.problems)
}

package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// switchTranscript: every chat runs a command on pi1, which takes 4 s
// from the second chat on (the first leaves a file behind), then answers.
const switchTranscript = `{"name":"console-switch","turns":[
  {"content":"","tool_calls":[{"id":"s1","name":"pi1__bash","arguments":{"command":"if [ -e ran ]; then sleep 4; fi; touch ran; echo done","timeout_ms":20000}}]},
  {"content":"answer: {{result s1}}"},
  {"content":"","tool_calls":[{"id":"s2","name":"pi1__bash","arguments":{"command":"sleep 4; echo again","timeout_ms":20000}}]},
  {"content":"answer: {{result s2}}"}]}`

// TestConsoleOpenAnotherWhileAChatRuns: opening another conversation while
// a chat runs asks first, since it cancels the chat; declined, the chat
// goes on to its answer; accepted, the chat is cancelled and nothing of it
// is written into the conversation opened. Before, a click on another
// conversation (to read it) cancelled the running chat without a word,
// and its "Canceled" notice landed at the top of the other conversation.
func TestConsoleOpenAnotherWhileAChatRuns(t *testing.T) {
	b, _, _ := consoleChatWithShell(t, "switch-test", switchTranscript, "")
	var accept atomic.Bool
	var dialogs atomic.Int32
	chromedp.ListenTarget(b.ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go chromedp.Run(b.ctx, page.HandleJavaScriptDialog(accept.Load()))
		}
	})
	answers := `document.querySelectorAll('#chat-log .msg.answer').length`
	b.run(t, "first conversation", chromedp.SendKeys("#chat-text", "one", chromedp.ByID), chromedp.Click("#chat-send", chromedp.ByID))
	b.waitTrue(t, answers+` === 1`)
	first := b.eval(t, `document.querySelector('#chat-title').textContent`).(string)
	b.run(t, "second conversation", chromedp.Click("#chat-new", chromedp.ByID), chromedp.SendKeys("#chat-text", "two", chromedp.ByID),
		chromedp.Click("#chat-send", chromedp.ByID))
	b.waitTrue(t, `!!document.querySelector('#chat-log .step.tool[data-call="s1"]') && document.querySelector('#chat-title').textContent !== `+jsString(first))
	second := b.eval(t, `document.querySelector('#chat-title').textContent`).(string)
	other := `#chat-list button.conv[data-conv=` + jsString(first) + `]`

	// Declined: still the second conversation, and its chat answers.
	b.waitTrue(t, `!!document.querySelector(`+jsString(other)+`)`)
	b.run(t, "open the first, declined", chromedp.Click(other))
	b.waitTrue(t, answers+` === 1 && document.querySelector('#chat-log .msg.answer p').textContent === 'answer: done'`)
	if d, title := dialogs.Load(), b.eval(t, `document.querySelector('#chat-title').textContent`).(string); d != 1 || title != second {
		t.Fatalf("%d questions asked, the page shows %q; want 1 and the second conversation, %q", d, title, second)
	}

	// Accepted: the first conversation, with nothing of the chat cancelled.
	accept.Store(true)
	b.run(t, "again", chromedp.SendKeys("#chat-text", "three", chromedp.ByID), chromedp.Click("#chat-send", chromedp.ByID))
	b.waitTrue(t, `!!document.querySelector('#chat-log .step.tool[data-call="s2"]')`)
	b.run(t, "open the first, accepted", chromedp.Click(other))
	b.waitTrue(t, `document.querySelector('#chat-title').textContent === `+jsString(first)+` && !document.querySelector('#chat-send').disabled`)
	b.run(t, "settle", chromedp.Sleep(300e6))
	if log := b.eval(t, `document.querySelector('#chat-log').innerText`).(string); strings.Contains(log, "Canceled") || strings.Contains(log, "again") {
		t.Fatalf("the first conversation shows what the cancelled chat of the second said:\n%s", log)
	}
	if d := dialogs.Load(); d != 2 {
		t.Fatalf("%d questions asked, want 2", d)
	}
	b.checkClean(t)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

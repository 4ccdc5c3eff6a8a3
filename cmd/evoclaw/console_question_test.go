package main

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// questionTranscript: two chats, each running a command of a second on
// pi1 and then asking the person a question.
const questionTranscript = `{"name":"console-question","turns":[
  {"content":"","tool_calls":[{"id":"s1","name":"pi1__bash","arguments":{"command":"sleep 1.5; echo one","timeout_ms":20000}}]},
  {"content":"","tool_calls":[{"id":"q1","name":"question","arguments":{"question":"Which pump?"}}]},
  {"content":"first: {{result q1}}"},
  {"content":"","tool_calls":[{"id":"s2","name":"pi1__bash","arguments":{"command":"sleep 1.5; echo two","timeout_ms":20000}}]},
  {"content":"","tool_calls":[{"id":"q2","name":"question","arguments":{"question":"Which valve?"}}]},
  {"content":"second: {{result q2}}"}]}`

// TestConsoleQuestionKeepsTheKeyboard: a question the model asks while the
// person types their next message in the message box does not take the
// keyboard from them: their keys stay in the message box, and the question
// shows as waiting (in the page's title and on the Chat tab) until they
// reply. Asked while they are not typing, it takes the keyboard, and once
// the reply is taken the message box has it back. Before, every question
// moved the keyboard to its reply box, so the rest of a message being
// typed went into the reply.
func TestConsoleQuestionKeepsTheKeyboard(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: not in -short")
	}
	b, _, _ := consoleChatWithShell(t, "question-test", questionTranscript, "")
	title := b.eval(t, `document.title`).(string)
	const reply = `[...document.querySelectorAll('#chat-log .step.question .reply')].pop()` // the latest question's

	// Typing the next message while the chat runs: the question arrives
	// mid-word, the rest of the word goes where the person was typing.
	b.run(t, "send", chromedp.SendKeys("#chat-text", "pumps?", chromedp.ByID), chromedp.Click("#chat-send", chromedp.ByID))
	b.waitTrue(t, `!!document.querySelector('#chat-log .step.tool[data-call="s1"]')`)
	b.run(t, "type the next message", chromedp.SendKeys("#chat-text", "and the val", chromedp.ByID))
	b.waitTrue(t, `!!document.querySelector('#chat-log .step.question .reply')`)
	b.run(t, "type on", chromedp.Sleep(200e6), chromedp.KeyEvent("ves"))
	if got := b.eval(t, `document.querySelector('#chat-text').value + '|' + `+reply+`.value`).(string); got != "and the valves|" {
		t.Fatalf("message box | reply box = %q, want the keys in the message box: %q", got, "and the valves|")
	}
	if got := b.eval(t, `document.activeElement.id`).(string); got != "chat-text" {
		t.Fatalf("the keyboard went to %q, want it left in the message box", got)
	}
	waiting := `document.title !== ` + fmt.Sprintf("%q", title) + ` && document.querySelector('#tabs [data-view="chat"]').dataset.question === "waiting"`
	if !b.eval(t, waiting).(bool) {
		t.Fatalf("the question waits unmarked: title %q, chat tab %q", b.eval(t, `document.title`),
			b.eval(t, `document.querySelector('#tabs [data-view="chat"]').outerHTML`))
	}
	b.run(t, "reply", chromedp.Click(`#chat-log .step.question .reply`), chromedp.KeyEvent("pump 1\r"))
	b.waitText(t, `#chat-log .step.question .state`, "You replied: pump 1")
	b.waitTrue(t, `document.title === `+fmt.Sprintf("%q", title)+` && !document.querySelector('#tabs [data-view="chat"]').dataset.question`)
	b.waitTrue(t, `[...document.querySelectorAll('#chat-log .msg.answer p')].some((p) => p.textContent === 'first: pump 1')`)

	// Not typing (the message sent with Enter, the box empty): the question
	// takes the keyboard, and gives it back to the message box once the
	// reply is taken.
	b.setValue(t, "#chat-text", "")
	b.run(t, "send with Enter", chromedp.Click("#chat-text", chromedp.ByID), chromedp.KeyEvent("valves?\r"))
	b.waitTrue(t, `document.querySelectorAll('#chat-log .step.question').length === 2`)
	b.waitTrue(t, `document.activeElement === `+reply)
	b.run(t, "reply at once", chromedp.KeyEvent("valve 3\r"))
	b.waitTrue(t, `[...document.querySelectorAll('#chat-log .msg.answer p')].some((p) => p.textContent === 'second: valve 3')`)
	b.waitTrue(t, `document.activeElement.id === 'chat-text'`)
	b.checkClean(t)
}

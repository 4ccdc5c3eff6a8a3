package orchestrator

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestChatsRefusedOnReadOnlyCard: a node whose card turns read-only under
// it (ext4 errors=remount-ro) fails the chat whose write meets it, says
// why in /readyz, and refuses every later chat before it reaches the
// model, also once the 5 s pause after a failed write has passed: the
// card stays read-only until it is checked and mounted again, and a chat
// let through ran its tool calls on the agents, then could not be
// recorded. A job the API cannot store says why too. It needs root and loop devices (testenv.NewCard).
func TestChatsRefusedOnReadOnlyCard(t *testing.T) {
	card := testenv.NewCard(t)
	var calls atomic.Int32
	var skew atomic.Int64
	provider := funcProvider(func(context.Context, llm.Request) (llm.Response, error) {
		calls.Add(1)
		return llm.Response{Message: llm.Message{Role: "assistant", Content: "hello"}}, nil
	})
	o := Options{Provider: provider, now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}
	_, base, token := startAPI(t, func(c *Config) { c.DataDir = filepath.Join(card.Dir, "data") }, o)

	chat := func() (int, string) {
		resp := send(t, "POST", base+"/v1/chat", token, ChatRequest{Text: "x"})
		var f ChatFailure
		decodeBody(t, resp, &f)
		return resp.StatusCode, f.Error.Message
	}
	if code, msg := chat(); code != 200 {
		t.Fatalf("chat on a healthy card: %d %s", code, msg)
	}
	card.TurnReadOnly()
	if code, msg := chat(); code != 503 {
		t.Fatalf("chat as the card turned read-only: %d %s, want 503", code, msg)
	}
	code, r := readyz(t, base)
	if c := check(r, CheckAudit); code != 503 || !strings.Contains(c.Reason, "file system is read-only") {
		t.Fatalf("readyz on the read-only card: %d %+v, want 503 naming the read-only file system", code, r)
	}
	skew.Store(int64(auditRetryAfter + time.Second)) // the pause after a failed write passed
	before := calls.Load()
	code, msg := chat()
	if code != 503 || !strings.Contains(msg, "file system is read-only") || calls.Load() != before {
		t.Fatalf("chat 6 s later on the still read-only card: %d %q, model called %d times, want 503 naming it before the model", code, msg, calls.Load()-before)
	}
	resp := send(t, "POST", base+"/v1/jobs", token, map[string]any{"id": "j", "schedule": "@every 1m", "prompt": "p"})
	var e errorBody
	decodeBody(t, resp, &e)
	if resp.StatusCode != 503 || !strings.Contains(e.Error.Message, "file system is read-only") {
		t.Fatalf("a job stored on the read-only card: %d %+v, want 503 naming the read-only file system", resp.StatusCode, e)
	}
}

package orchestrator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestRunningChatsAreBounded: with every slot of [loop] max_running_chats
// taken, a new chat waits for one within its own deadline: it runs once a
// slot frees, and is refused with 429 and Retry-After when none does. A
// sub-agent's chat (Parent set) runs within its parent's slot.
func TestRunningChatsAreBounded(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 10)
	provider := funcProvider(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		text := req.Messages[len(req.Messages)-1].Content
		entered <- text
		if text == "hold" {
			select {
			case <-release:
			case <-ctx.Done():
				return llm.Response{}, ctx.Err()
			}
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "done " + text}}, nil
	})
	node, _, _ := startAPI(t, func(c *Config) { c.Loop.MaxRunningChats = 1 }, Options{Provider: provider})

	held := make(chan error, 1)
	go func() {
		_, err := node.Chat(context.Background(), "holder", "hold")
		held <- err
	}()
	if got := <-entered; got != "hold" {
		t.Fatalf("first completion for %q, want the holding chat", got)
	}

	// Refused once its wait is over.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := node.Chat(ctx, "late", "late")
	cancel()
	if !errors.Is(err, ErrTooManyChats) {
		t.Fatalf("chat with every slot taken: %v, want ErrTooManyChats", err)
	}
	// Over HTTP that is a 429 with Retry-After, which OpenAI's clients retry.
	code, typ := chatErrorStatus(err)
	rec := httptest.NewRecorder()
	writeAPIError(rec, code, typ, err.Error())
	if rec.Code != http.StatusTooManyRequests || typ != ErrTypeBusy || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("answered %d %s, Retry-After %q; want 429 %s with Retry-After", rec.Code, typ, rec.Header().Get("Retry-After"), ErrTypeBusy)
	}

	// A caller that gives up while it waits: canceled, not busy.
	cctx, ccancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, ccancel)
	_, err = node.Chat(cctx, "gone", "gone")
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTooManyChats) {
		t.Fatalf("chat canceled while it waited: %v, want context.Canceled", err)
	}
	if code, typ := chatErrorStatus(err); code != statusClientClosed || typ != ErrTypeCanceled {
		t.Fatalf("canceled wait answered %d %s, want %d %s", code, typ, statusClientClosed, ErrTypeCanceled)
	}

	// A sub-agent's chat does not wait for a slot.
	ans, err := node.Converse(context.Background(), ChatInput{ConversationID: "child", Text: "child", Parent: "holder", Depth: 1})
	if err != nil || ans.Err != nil {
		t.Fatalf("sub-agent chat: %v %v", err, ans)
	}

	// A chat that waits runs once the slot frees.
	waited := make(chan error, 1)
	go func() {
		ans, err := node.Chat(context.Background(), "waiter", "waiter")
		if err == nil && ans.Err != nil {
			err = ans.Err
		}
		waited <- err
	}()
	for len(entered) > 0 {
		<-entered // the sub-agent's completion
	}
	select {
	case got := <-entered:
		t.Fatalf("completion for %q while the only slot is held", got)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return len(entered) > 0 }, "the waiting chat to start")
	if err := <-waited; err != nil {
		t.Fatalf("the waiting chat: %v", err)
	}
}

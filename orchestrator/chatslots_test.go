package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestRunningChatsInputIsBounded: the input of the chats running at once
// is bounded by MaxRunningChatBytes, beside their number: a running chat
// holds several times its text, and 40 chats of 4 MiB took 290 to 780 MB
// of a node within max_running_chats. Large chats past the bound wait for
// room within their deadline, then are refused as busy; a small chat
// still runs beside them.
func TestRunningChatsInputIsBounded(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan int, 64)
	provider := funcProvider(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		text := req.Messages[len(req.Messages)-1].Content
		entered <- len(text)
		if len(text) > smallBody {
			select {
			case <-release:
			case <-ctx.Done():
				return llm.Response{}, ctx.Err()
			}
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "done"}}, nil
	})
	node, _, _ := startAPI(t, nil, Options{Provider: provider})
	big := strings.Repeat("x", 4<<20)
	fit := MaxRunningChatBytes / len(big)
	held := make(chan error, fit)
	for i := range fit {
		go func() {
			_, err := node.Chat(context.Background(), fmt.Sprint("big-", i), big)
			held <- err
		}()
	}
	for range fit {
		<-entered
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := node.Chat(ctx, "one-more", big)
	cancel()
	if !errors.Is(err, ErrTooManyChats) {
		t.Fatalf("a large chat past %d MiB of running input: %v, want ErrTooManyChats", MaxRunningChatBytes>>20, err)
	}
	if ans, err := node.Chat(context.Background(), "small", "hello"); err != nil || ans.Text != "done" {
		t.Fatalf("a small chat beside them: %v %+v", err, ans)
	}
	close(release)
	for range fit {
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	}
	// Their input given back: a large chat runs again.
	if _, err := node.Chat(context.Background(), "after", big[:1<<20]); err != nil {
		t.Fatal(err)
	}
}

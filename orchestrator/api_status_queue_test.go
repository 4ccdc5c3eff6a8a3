package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// chatOutcome is how a chat request ended for its client: the HTTP status
// (or, in a stream that had started, the failure's own status; 0 when the
// stream does not say) and the error's type and message.
type chatOutcome struct {
	status       int
	typ, message string
}

// postChat sends a chat to path (POST /v1/chat or /v1/chat/completions,
// streamed or not) in conversation conv and reads how it ended. It may run
// on any goroutine: failures are returned, not fatal.
func postChat(ctx context.Context, base, token, path, conv string, stream bool) (chatOutcome, error) {
	body := map[string]any{"text": "hi", "conversation_id": conv, "stream": stream}
	if path == "/v1/chat/completions" {
		body = with(completion("hi"), "conversation_id", conv, "stream", stream)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return chatOutcome{}, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(b))
	if err != nil {
		return chatOutcome{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return chatOutcome{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return chatOutcome{}, err
	}
	var f ChatFailure // also holds an errorBody's {"error": {...}}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if resp.StatusCode != http.StatusOK {
			if err := json.Unmarshal(raw, &f); err != nil {
				return chatOutcome{}, fmt.Errorf("status %d: %w: %s", resp.StatusCode, err, raw)
			}
		}
		return chatOutcome{status: resp.StatusCode, typ: f.Error.Type, message: f.Error.Message}, nil
	}
	// A stream that started: its failure is the last event.
	for _, line := range strings.Split(string(raw), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"error"`) {
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				return chatOutcome{}, fmt.Errorf("stream error event: %w: %s", err, data)
			}
			return chatOutcome{status: f.Status, typ: f.Error.Type, message: f.Error.Message}, nil
		}
	}
	return chatOutcome{status: http.StatusOK}, nil
}

// Several clients wait on one conversation whose LLM never answers: each is
// told 504 timeout_error when its chat_timeout passes, or 429 when the
// conversation already queues 16 chats; never 499, which is only what the
// node logs for a client that left. (A canceled chat's LLM call failed
// "canceled" late, and that failure was the answer of the chat queued
// behind it.)
func TestQueuedChatsOfAStuckConversationTimeOut(t *testing.T) {
	const chatTimeout = 600 * time.Millisecond // under streamHold: a stream answers its status
	var logs testenv.Buffer
	_, base, token := startAPI(t, func(c *Config) { c.Loop.ChatTimeout.Duration = chatTimeout },
		Options{Provider: stuckProvider{}, Logger: logs.Logger(slog.LevelInfo)})
	tests := []struct {
		name    string
		path    string
		stream  bool
		clients int
		every   time.Duration // between two clients' requests
	}{
		{"chat", "/v1/chat", false, 4, 100 * time.Millisecond},
		{"chat streamed", "/v1/chat", true, 4, 100 * time.Millisecond},
		{"completions", "/v1/chat/completions", false, 4, 100 * time.Millisecond},
		{"completions streamed", "/v1/chat/completions", true, 4, 100 * time.Millisecond},
		{"more chats than the queue holds", "/v1/chat", false, 20, 5 * time.Millisecond},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv := fmt.Sprintf("stuck-%d", i)
			got := make([]chatOutcome, tt.clients)
			errs := make([]error, tt.clients)
			var wg sync.WaitGroup
			for j := range tt.clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[j], errs[j] = postChat(context.Background(), base, token, tt.path, conv, tt.stream)
				}()
				time.Sleep(tt.every) // the clients' pace, not a wait for an outcome
			}
			wg.Wait()
			busy, ranFirst := 0, 0
			for j, o := range got {
				switch {
				case errs[j] != nil:
					t.Errorf("client %d: %v", j+1, errs[j])
				case o.status == http.StatusTooManyRequests && o.typ == ErrTypeBusy:
					busy++
				case o.status != http.StatusGatewayTimeout || o.typ != ErrTypeTimeout:
					t.Errorf("client %d (still connected): %d %s %q, want 504 %s", j+1, o.status, o.typ, o.message, ErrTypeTimeout)
				case !strings.Contains(o.message, "behind another chat of the conversation"):
					ranFirst++
				}
			}
			// Every timed-out chat but the first says it waited behind
			// another.
			if ranFirst != 1 {
				t.Errorf("%d timed-out chats do not say they waited behind another, want 1: %+v", ranFirst, got)
			}
			// One chat runs (or loads) and 16 wait: the rest are refused.
			if queueLen := actors.DefaultQueueLen; busy < tt.clients-queueLen-1 || busy > max(0, tt.clients-queueLen) {
				t.Errorf("%d of %d clients refused busy, want %d", busy, tt.clients, max(0, tt.clients-queueLen-1))
			}
			if strings.Contains(logs.String(), "conversation="+conv+" status=499") {
				t.Errorf("node logged a chat of %s as abandoned by its client; none left:\n%s", conv, logs.String())
			}
		})
	}
}

// signalStuck never answers before its context ends; each completion says
// on entered that it began and on ended why it returned.
type signalStuck struct {
	entered chan struct{}
	ended   chan error
}

func (signalStuck) Name() string { return "stuck" }
func (s signalStuck) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	s.entered <- struct{}{}
	<-ctx.Done()
	s.ended <- ctx.Err()
	return llm.Response{}, &llm.Error{Kind: llm.KindOf(ctx.Err()), Provider: "stuck", Message: "request cancelled", Err: ctx.Err()}
}

// A client that really leaves is still handled as gone: its chat is
// canceled (a running one's LLM call stops, a queued one never runs) and
// the node logs it as abandoned (499), while a client that stays in the
// same conversation is told 504.
func TestAChatWhoseClientLeavesIsAbandoned(t *testing.T) {
	const chatTimeout = 1500 * time.Millisecond
	tests := []struct {
		name string
		// behind: the leaving client's chat waits behind one whose
		// client stays.
		behind bool
	}{
		{"running chat", false},
		{"queued chat", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prov := signalStuck{entered: make(chan struct{}, 4), ended: make(chan error, 4)}
			var logs testenv.Buffer
			node, base, token := startAPI(t, func(c *Config) { c.Loop.ChatTimeout.Duration = chatTimeout },
				Options{Provider: prov, Logger: logs.Logger(slog.LevelInfo)})
			const conv = "leaving"
			var stays chan chatOutcome
			if tt.behind {
				stays = make(chan chatOutcome, 1)
				go func() {
					o, err := postChat(context.Background(), base, token, "/v1/chat", conv, false)
					if err != nil {
						o.message = err.Error()
					}
					stays <- o
				}()
				<-prov.entered
			}
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			left := make(chan error, 1)
			go func() {
				_, err := postChat(ctx, base, token, "/v1/chat", conv, false)
				left <- err
			}()
			if tt.behind {
				testenv.Eventually(t, 5*time.Second, func() bool {
					res, err := actors.Ask(node.system.Root, node.convs.PID, &actors.StateQuery{ConversationID: conv}, time.Second)
					return err == nil && res.(*actors.SessionState).Queued == 1
				}, "the leaving client's chat queued")
			} else {
				<-prov.entered
			}
			leave()
			if err := <-left; !errors.Is(err, context.Canceled) {
				t.Fatalf("leaving client: %v, want its own cancel", err)
			}
			testenv.Eventually(t, chatTimeout/2, func() bool {
				return strings.Contains(logs.String(), `msg="chat abandoned by its client" conversation=`+conv+" status=499")
			}, "the node logs the chat abandoned by its client")
			if tt.behind {
				o := <-stays
				if o.status != http.StatusGatewayTimeout || o.typ != ErrTypeTimeout {
					t.Fatalf("client that stayed: %d %s %q, want 504 %s", o.status, o.typ, o.message, ErrTypeTimeout)
				}
				if n := strings.Count(logs.String(), "status=499"); n != 1 {
					t.Fatalf("%d chats logged abandoned, want 1:\n%s", n, logs.String())
				}
				select {
				case <-prov.entered:
					t.Fatal("the abandoned queued chat called the LLM")
				default:
				}
				return
			}
			// The running chat's LLM call was stopped by the cancel, before
			// any deadline.
			if err := <-prov.ended; !errors.Is(err, context.Canceled) {
				t.Fatalf("LLM call ended with %v, want canceled", err)
			}
		})
	}
}

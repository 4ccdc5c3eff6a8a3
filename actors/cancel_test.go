package actors

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// gatedHistory is a memHistory whose writes wait until gate is closed.
type gatedHistory struct {
	memHistory
	gate chan struct{}
}

func (s *gatedHistory) AppendHistory(ctx context.Context, id string, msgs []llm.Message) error {
	select {
	case <-s.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.memHistory.AppendHistory(ctx, id, msgs)
}

// ctxProvider is an llm.Provider made of a function of the call's context.
type ctxProvider func(ctx context.Context, req llm.Request) (llm.Response, error)

func (ctxProvider) Name() string { return "ctx" }
func (f ctxProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return f(ctx, req)
}

// askResult is what an Ask returned.
type askResult struct {
	v   any
	err error
}

func (r askResult) get() (any, error) { return r.v, r.err }

// A canceled chat's LLM call fails "canceled" once the cancel stops it,
// while the chat's history is still being stored. That late failure is not
// the answer of the chat queued behind it: the queued chat runs and gets
// its own answer.
func TestCanceledCallsLateFailureIsNotTheNextChatsAnswer(t *testing.T) {
	var calls atomic.Int32
	entered, secondEntered, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	prov := ctxProvider(func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-ctx.Done() // as a server that never answers
			return llm.Response{}, &llm.Error{Kind: llm.KindCanceled, Provider: "stuck", Message: "request cancelled", Err: ctx.Err()}
		}
		close(secondEntered)
		select {
		case <-release:
		case <-ctx.Done():
			return llm.Response{}, ctx.Err()
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "second answer"}}, nil
	})
	store := &gatedHistory{gate: make(chan struct{})}
	h := newHarness(t, echoTranscript, func(o *ConvOptions) { o.Provider = prov; o.History = store })

	failedLate := make(chan struct{}, 1)
	first := &Chat{ConversationID: "c", Text: "first", Progress: func(p Progress) {
		if p.Kind == ProgressLLMEnd {
			failedLate <- struct{}{}
		}
	}}
	running := askLater(h.sys.Root, h.convs.PID, first, 20*time.Second)
	<-entered
	queued, wait := make(chan askResult, 1), &QueueWait{}
	go func() {
		v, err := Ask(h.sys.Root, h.convs.PID, &Chat{ConversationID: "c", Text: "second", Wait: wait}, 20*time.Second)
		queued <- askResult{v, err}
	}()
	testenv.Eventually(t, 5*time.Second, func() bool {
		res, err := Ask(h.sys.Root, h.convs.PID, &StateQuery{ConversationID: "c"}, 5*time.Second)
		return err == nil && res.(*SessionState).Queued == 1
	}, "second chat queued")

	if _, started := wait.Started(); started || !wait.Behind() {
		t.Fatalf("queued chat: started %v, behind %v; want waiting behind the first", started, wait.Behind())
	}
	h.sys.Root.Send(h.convs.PID, &Cancel{ConversationID: "c", Chat: first})
	<-failedLate // the canceled call failed; its answer is on its way to the conversation
	// A round trip through the conversation's mailbox: the late answer,
	// sent before, is handled by now, while the first chat is still storing.
	if _, err := Ask(h.sys.Root, h.convs.PID, &StateQuery{ConversationID: "c"}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	close(store.gate)

	res, err := running()
	if err != nil {
		t.Fatal(err)
	}
	if ans := res.(*Answer); !errors.Is(ans.Err, ErrCanceled) {
		t.Fatalf("canceled chat: %+v, want %v", ans, ErrCanceled)
	}
	// The queued chat runs now, and nothing answers it before its own call
	// does (a second end of the first chat would, when its write is done).
	<-secondEntered
	if waited, started := wait.Started(); !started || waited <= 0 {
		t.Fatalf("queued chat running: started %v after %s; want started after a wait", started, waited)
	}
	select {
	case r := <-queued:
		if ans, ok := r.v.(*Answer); ok {
			t.Fatalf("queued chat answered while its LLM call runs: text %q err %v", ans.Text, ans.Err)
		}
		t.Fatalf("queued chat answered while its LLM call runs: %v %v", r.v, r.err)
	case <-time.After(300 * time.Millisecond): // the first chat's writes are long done
	}
	close(release)
	if res, err = (<-queued).get(); err != nil {
		t.Fatal(err)
	}
	if ans := res.(*Answer); ans.Err != nil || ans.Text != "second answer" {
		t.Fatalf("queued chat: text %q err %v, want its own answer", ans.Text, ans.Err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d LLM calls, want 2 (one per chat)", n)
	}
}

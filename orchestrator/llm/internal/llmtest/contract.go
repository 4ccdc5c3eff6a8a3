package llmtest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Dial makes the provider under test: talking to the server at url (a
// Server's URL), streaming when stream is set, with idle as its idle
// timeout.
type Dial func(url string, stream bool, idle time.Duration) llm.Provider

// Contract checks what every HTTP provider owes its callers when the
// server stalls or is gone: a stream silent for longer than the idle timeout
// is a timeout error before the caller's deadline; cancelling the context
// ends a stalled call as canceled and a deadline as a timeout; a server that
// is not there is a retryable network error; a redirect is an error that
// names its target, and nothing is sent there. The folder dir under Dir must
// hold stream_stall.json, one event and then silence.
func Contract(t *testing.T, dir string, dial Dial, req llm.Request) {
	stall := func(t *testing.T) string { return ServeFiles(t, dir, "stream_stall.json").URL }
	t.Run("idle timeout", func(t *testing.T) {
		p := dial(stall(t), true, 100*time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := p.Complete(ctx, req)
		if llm.KindOf(err) != llm.KindTimeout || !strings.Contains(err.Error(), "idle_timeout") {
			t.Fatalf("err = %v, want an idle timeout", err)
		}
		if ctx.Err() != nil {
			t.Fatal("the idle timeout did not fire before the outer deadline")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		p := dial(stall(t), true, -1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := p.Complete(ctx, req)
			done <- err
		}()
		cancel()
		select {
		case err := <-done:
			if llm.KindOf(err) != llm.KindCanceled {
				t.Fatalf("err = %v (kind %s), want canceled", err, llm.KindOf(err))
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Complete did not return after cancel")
		}
	})
	t.Run("deadline", func(t *testing.T) {
		p := dial(stall(t), true, -1)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := p.Complete(ctx, req); llm.KindOf(err) != llm.KindTimeout {
			t.Fatalf("err = %v, want timeout", err)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		var elsewhere atomic.Int64
		other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
		t.Cleanup(other.Close)
		for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.Path, status)
			}))
			t.Cleanup(s.Close)
			for _, stream := range []bool{false, true} {
				_, err := dial(s.URL, stream, 0).Complete(context.Background(), req)
				var e *llm.Error
				if !errors.As(err, &e) || e.Retryable() || e.Status != status || !strings.Contains(err.Error(), other.URL) {
					t.Errorf("%d, stream %v: err = %v, want a redirect error naming %s", status, stream, err, other.URL)
				}
			}
		}
		if n := elsewhere.Load(); n != 0 {
			t.Fatalf("the redirect target got %d requests", n)
		}
	})
	t.Run("no server", func(t *testing.T) {
		s := Serve(t)
		url := s.URL
		s.Close()
		_, err := dial(url, false, 0).Complete(context.Background(), req)
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindNetwork || !e.Retryable() {
			t.Fatalf("err = %v, want a retryable network error", err)
		}
	})
}

// FirstChunkLate checks that the idle timeout counts from the answer's
// first byte, not from the response headers: a server that sends its
// headers at once and its first chunk (stream, a whole answer in the
// provider's wire format, whose text is want) after three idle timeouts,
// as llama.cpp's server does while it evaluates a long prompt, is
// answered; the time to the first token is the call's timeout's to bound.
// Silence after the first chunk is still an idle timeout ("idle timeout"
// of Contract).
func FirstChunkLate(t *testing.T, dial Dial, req llm.Request, stream, want string) {
	const idle = 100 * time.Millisecond
	s := Script(t, Step{Wait: 3 * idle, Text: stream})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := dial(s.URL, true, idle).Complete(ctx, req)
	if err != nil || r.Message.Content != want {
		t.Fatalf("answer %q, err %v; want %q", r.Message.Content, err, want)
	}
}

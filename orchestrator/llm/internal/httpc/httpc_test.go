package httpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/sse"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 120 ":                         2 * time.Minute,
		"1.5":                           1500 * time.Millisecond,
		"0":                             0,
		"-3":                            0,
		"99999999":                      MaxRetryAfter,
		"315360000":                     MaxRetryAfter, // ten years
		"Inf":                           MaxRetryAfter,
		"NaN":                           0,
		"Fri, 01 Jan 2100 00:00:00 GMT": MaxRetryAfter,
		"soon":                          0,
		"Sun, 22 Nov 2026 12:00:30 GMT": 30 * time.Second,
		"Sun, 22 Nov 2026 11:59:00 GMT": 0,
	} {
		if got := RetryAfter(h, now); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}

func TestTransportKinds(t *testing.T) {
	c := &Call{Provider: "openai", Model: "m", URL: "http://x/v1/chat/completions"}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	if e := c.Transport(context.Background(), refused); e.Kind != llm.KindNetwork || !strings.Contains(e.Error(), "connection refused") {
		t.Errorf("refused: %v", e)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	if e := c.Transport(expired, context.DeadlineExceeded); e.Kind != llm.KindTimeout {
		t.Errorf("deadline: %v", e)
	}
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if e := c.Transport(canceled, context.Canceled); e.Kind != llm.KindCanceled {
		t.Errorf("cancel: %v", e)
	}
	if e := c.Transport(canceled, ErrIdle); e.Kind != llm.KindTimeout {
		t.Errorf("idle: %v", e)
	}
}

// blockingBody returns one chunk, then blocks until closed or cancelled.
type blockingBody struct {
	sent bool
	done chan struct{}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, "data: x\n\n"), nil
	}
	<-b.done
	return 0, context.Canceled
}

func (b *blockingBody) Close() error { return nil }

func TestIdleBodyFires(t *testing.T) {
	bb := &blockingBody{done: make(chan struct{})}
	body := NewIdleBody(bb, 50*time.Millisecond, func() { close(bb.done) })
	defer body.Close()
	buf := make([]byte, 64)
	if n, err := body.Read(buf); n == 0 || err != nil {
		t.Fatalf("first read: %d %v", n, err)
	}
	_, err := io.ReadAll(body)
	if !errors.Is(err, ErrIdle) || !body.Fired() {
		t.Fatalf("err = %v fired %v", err, body.Fired())
	}
}

func TestEventsClassifiesReadErrors(t *testing.T) {
	c := &Call{Provider: "openai", Model: "m"}
	ev := c.Events(context.Background(), strings.NewReader("data: a\n\n"))
	if e, ok, err := ev.Next(); !ok || err != nil || string(e.Data) != "a" {
		t.Fatalf("first event: %q %v %v", e.Data, ok, err)
	}
	if _, ok, err := ev.Next(); ok || err != nil {
		t.Fatalf("end of stream: ok %v err %v, want neither", ok, err)
	}
	long := "data: " + strings.Repeat("x", sse.MaxEvent+1) + "\n\n"
	if _, _, err := c.Events(context.Background(), strings.NewReader(long)).Next(); llm.KindOf(err) != llm.KindMalformed {
		t.Fatalf("event too long: %v, want malformed", err)
	}
	broken := io.MultiReader(strings.NewReader("data: a"), iotest.ErrReader(errors.New("connection reset by peer")))
	if _, _, err := c.Events(context.Background(), broken).Next(); llm.KindOf(err) != llm.KindNetwork {
		t.Fatalf("read error: %v, want network", err)
	}
}

// All yields the events in order and ends at the end of the stream, or
// after yielding a read error once.
func TestEventsAll(t *testing.T) {
	c := &Call{Provider: "openai", Model: "m"}
	for _, tc := range []struct {
		name string
		r    io.Reader
		want string // data of the events, then "!" and the error's kind
	}{
		{"to the end", strings.NewReader("data: a\n\n: comment\n\ndata: b\n\n"), "a b"},
		{"empty", strings.NewReader(""), ""},
		{"cut", io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(errors.New("connection reset by peer"))), "a !" + string(llm.KindNetwork)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for ev, err := range c.Events(context.Background(), tc.r).All() {
				if err != nil {
					got = append(got, "!"+string(llm.KindOf(err)))
					continue // a second error would show here
				}
				got = append(got, string(ev.Data))
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Fatalf("events %q, want %q", s, tc.want)
			}
		})
	}
	// A consumer that stops early stops the reading.
	n := 0
	for range c.Events(context.Background(), strings.NewReader("data: a\n\ndata: b\n\n")).All() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d events after a break", n)
	}
}

// TestUsageBounded: token counts a server reports that are negative or
// absurd reach the caller as 0 (the audit trail refused a negative count,
// dropping the call's record; two huge ones summed to a negative total),
// over a real exchange.
func TestUsageBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		got  llm.Usage
		want llm.Usage
	}{
		{"plain", llm.Usage{InputTokens: 410, OutputTokens: 61}, llm.Usage{InputTokens: 410, OutputTokens: 61}},
		{"negative", llm.Usage{InputTokens: -5, OutputTokens: -7}, llm.Usage{}},
		{"one negative", llm.Usage{InputTokens: 12, OutputTokens: -1}, llm.Usage{InputTokens: 12}},
		{"huge", llm.Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64}, llm.Usage{}},
		{"at the bound", llm.Usage{InputTokens: MaxUsageTokens, OutputTokens: MaxUsageTokens + 1}, llm.Usage{InputTokens: MaxUsageTokens}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(c.got)
			}))
			defer s.Close()
			call := &Call{Provider: "openai", Model: "m", URL: s.URL, Body: map[string]any{}}
			resp, err := call.Exchange(context.Background(), false, 0, Codec{Parse: func(_ *Call, b []byte) (llm.Response, error) {
				var u llm.Usage
				err := json.Unmarshal(b, &u)
				return llm.Response{Usage: u}, err
			}})
			if err != nil || resp.Usage != c.want {
				t.Fatalf("usage = %+v, err = %v; want %+v", resp.Usage, err, c.want)
			}
		})
	}
}

// TestToolCallsBounded: an answer with more than llm.MaxToolCalls tool
// calls fails as malformed (100,000 calls reached the tool loop from one
// 8 MB answer), over a real exchange, whole and streamed.
func TestToolCallsBounded(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Query().Get("n"))
	}))
	defer s.Close()
	codec := func(b []byte) (llm.Response, error) {
		var n int
		err := json.Unmarshal(b, &n)
		return llm.Response{Message: llm.Message{ToolCalls: make([]llm.ToolCall, n)}}, err
	}
	whole := Codec{Parse: func(_ *Call, b []byte) (llm.Response, error) { return codec(b) }}
	streamed := Codec{ReadStream: func(_ context.Context, _ *Call, r io.Reader) (llm.Response, error) {
		b, err := io.ReadAll(r)
		if err != nil {
			return llm.Response{}, err
		}
		return codec(b)
	}}
	for _, n := range []int{0, 1, llm.MaxToolCalls, llm.MaxToolCalls + 1, 100000} {
		for _, stream := range []bool{false, true} {
			call := &Call{Provider: "openai", Model: "m", URL: fmt.Sprintf("%s?n=%d", s.URL, n), Body: map[string]any{}}
			c := whole
			if stream {
				c = streamed
			}
			resp, err := call.Exchange(context.Background(), stream, 0, c)
			if n > llm.MaxToolCalls {
				if llm.KindOf(err) != llm.KindMalformed || !strings.Contains(err.Error(), "tool calls") {
					t.Errorf("%d calls, stream %v: err = %v, want malformed", n, stream, err)
				}
				continue
			}
			if err != nil || len(resp.Message.ToolCalls) != n {
				t.Errorf("%d calls, stream %v: %d calls, err %v", n, stream, len(resp.Message.ToolCalls), err)
			}
		}
	}
}

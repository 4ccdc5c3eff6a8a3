package httpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/sse"
)

// Codec is what differs between providers in one exchange.
type Codec struct {
	// ErrorMessage extracts the provider's error message from a non-2xx body.
	ErrorMessage func([]byte) string
	// Parse reads a whole (non-streamed) answer.
	Parse func(call *Call, b []byte) (llm.Response, error)
	// ReadStream reads a streamed answer event by event.
	ReadStream func(ctx context.Context, call *Call, r io.Reader) (llm.Response, error)
}

// Exchange sends call and turns the answer into a response: whole with
// Parse, or, when stream is set, with ReadStream while the server, once
// its answer has begun, never stays silent longer than idle (a stall is a
// timeout error; see IdleBody). It asks for
// JSON or an event stream accordingly; a server that ignores stream and
// answers in one JSON piece is parsed whole, and one that streams when
// not asked to is read as a stream. The response gets its latency,
// provider and model (the call's when the answer names none), and its
// usage passes BoundUsage. An answer with more than llm.MaxToolCalls tool
// calls is malformed.
func (c *Call) Exchange(ctx context.Context, stream bool, idle time.Duration, codec Codec) (llm.Response, error) {
	start := c.now()
	if c.Header.Get("Accept") == "" {
		if c.Header == nil {
			c.Header = http.Header{}
		}
		c.Header.Set("Accept", "application/json")
		if stream {
			c.Header.Set("Accept", "text/event-stream")
		}
	}
	var resp llm.Response
	var err error
	if stream {
		resp, err = c.streamed(ctx, idle, codec)
	} else {
		resp, err = c.whole(ctx, codec)
	}
	if err != nil {
		return llm.Response{}, err
	}
	if n := len(resp.Message.ToolCalls); n > llm.MaxToolCalls {
		return llm.Response{}, c.Errorf(llm.KindMalformed, 200, nil, "answer with %d tool calls, more than %d", n, llm.MaxToolCalls)
	}
	resp.Usage = BoundUsage(resp.Usage)
	resp.Latency = c.now().Sub(start)
	resp.Provider = c.Provider
	resp.Attempts = 1
	if resp.Model == "" {
		resp.Model = c.Model
	}
	return resp, nil
}

// StableID names a tool call that came without an id, or with one an
// earlier call of the same answer has: the same answer always yields the
// same id, and different answers differ through the response id when the
// server sends one. Ids must be unique: results are matched to calls by
// id, in the history, the audit trail and by the APIs that get the
// history back.
func StableID(respID string, i int, name string, args []byte, dup string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00", respID, i, name, dup)
	h.Write(args)
	return fmt.Sprintf("call_%d_%s", i, hex.EncodeToString(h.Sum(nil))[:12])
}

// MaxUsageTokens is the largest token count of one completion taken from a
// server: a thousand times the largest context window of today's models,
// and small enough that no sum of counts overflows.
const MaxUsageTokens = 1 << 30

// BoundUsage returns u with every count that is negative or above
// MaxUsageTokens set to 0, as if the server had not reported it: a count
// the audit trail refuses (negative) or whose sums overflow (huge) says
// nothing true about the call.
func BoundUsage(u llm.Usage) llm.Usage {
	for _, n := range []*int64{&u.InputTokens, &u.OutputTokens} {
		if *n < 0 || *n > MaxUsageTokens {
			*n = 0
		}
	}
	return u
}

func (c *Call) whole(ctx context.Context, codec Codec) (llm.Response, error) {
	hr, err := c.Post(ctx, codec.ErrorMessage)
	if err != nil {
		return llm.Response{}, err
	}
	defer hr.Body.Close()
	if strings.HasPrefix(hr.Header.Get("Content-Type"), "text/event-stream") {
		// The server streams although it was not asked to (a proxy set
		// to stream): read the stream, bounded as any other.
		return codec.ReadStream(ctx, c, hr.Body)
	}
	b, err := c.ReadAll(ctx, hr.Body)
	if err != nil {
		return llm.Response{}, err
	}
	return codec.Parse(c, b)
}

func (c *Call) streamed(ctx context.Context, idle time.Duration, codec Codec) (llm.Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hr, err := c.Post(ctx, codec.ErrorMessage)
	if err != nil {
		return llm.Response{}, err
	}
	if strings.HasPrefix(hr.Header.Get("Content-Type"), "application/json") {
		// The server ignored stream=true and answered in one piece.
		defer hr.Body.Close()
		b, err := c.ReadAll(ctx, hr.Body)
		if err != nil {
			return llm.Response{}, err
		}
		return codec.Parse(c, b)
	}
	body := NewIdleBody(hr.Body, idle, cancel)
	defer body.Close()
	resp, err := codec.ReadStream(ctx, c, body)
	if err != nil && body.Fired() {
		return llm.Response{}, c.Errorf(llm.KindTimeout, 0, ErrIdle, "the server sent nothing for %s (idle_timeout)", idle)
	}
	return resp, err
}

// MaxStream bounds the event data of one streamed answer, in bytes (the
// default of Call.StreamLimit). A streamed token costs a chunk of a few
// hundred bytes, so this is room for an answer of some 200 000 tokens, and
// it stops a server that streams without end long before memory runs out.
const MaxStream = 4 * MaxBody

// Events reads the events of a streamed answer for a codec's ReadStream.
// It bounds what the stream may cost: the call's StreamLimit of event
// data, and its AnswerLimit of answer kept (Keep), as for an answer read
// whole.
type Events struct {
	ctx           context.Context
	call          *Call
	r             *sse.Reader
	read, readMax int64     // event data read so far, and its bound
	kept, keptMax int64     // answer bytes the codec kept so far (Keep), and their bound
	events        int       // events read so far
	last          time.Time // when the last of them arrived
	body          *IdleBody // the streamed body, when it is one (Finishing)
	finishing     bool      // set by Finishing: a read error ends the stream
	grace         bool      // set by Finishing, cleared by Resume: each event re-arms the grace
}

// Events reads the server-sent events of r, a streamed answer to c.
func (c *Call) Events(ctx context.Context, r io.Reader) *Events {
	e := &Events{ctx: ctx, call: c, r: sse.NewReader(r), readMax: c.StreamLimit, keptMax: c.AnswerLimit}
	e.body, _ = r.(*IdleBody)
	if e.readMax <= 0 {
		e.readMax = MaxStream
	}
	if e.keptMax <= 0 {
		e.keptMax = MaxBody
	}
	return e
}

// ErrPartialAnswer is the cause of a timeout that cut a streamed answer
// after part of it had arrived.
var ErrPartialAnswer = errors.New("partial answer")

// Next returns the next event with data; ok is false at the end of the
// stream. An event over sse.MaxEvent makes a malformed answer, and so does
// a body without a single event but with lines that are not of the format
// (an HTML page or a plain-text error answered with 200), whose first line
// the error quotes. A deadline that passes after events arrived is a
// timeout caused by ErrPartialAnswer that says how far the answer got and
// whether it was still arriving (a slow model) or had stopped for longer
// than the idle timeout while keep-alive lines held the connection (a
// stuck one); any other read error is a transport failure of the call.
func (e *Events) Next() (ev sse.Event, ok bool, err error) {
	ev, err = e.r.Next()
	switch {
	case err == nil:
		if e.read += int64(len(ev.Data)); e.read > e.readMax {
			return sse.Event{}, false, e.call.Errorf(llm.KindMalformed, 200, nil, "streamed answer longer than %d bytes of events", e.readMax)
		}
		e.events++
		e.last = e.call.now()
		if e.grace && e.body != nil {
			e.body.Tail()
		}
		return ev, true, nil
	case errors.Is(err, io.EOF):
		if stray := e.r.Stray(); e.events == 0 && stray != nil {
			return sse.Event{}, false, e.call.Errorf(llm.KindMalformed, 200, nil, "the answer is not an event stream: %s", llm.Excerpt(string(stray), 200))
		}
		return sse.Event{}, false, nil
	case errors.Is(err, sse.ErrTooLong):
		return sse.Event{}, false, e.call.Errorf(llm.KindMalformed, 200, err, "stream")
	case e.finishing && !e.callerCanceled():
		// The answer is complete: the grace of Finishing passed, or the
		// deadline came, or the connection broke, within what was
		// optional. That is the end.
		return sse.Event{}, false, nil
	case e.events > 0 && !errors.Is(err, ErrIdle) && errors.Is(e.ctx.Err(), context.DeadlineExceeded):
		return sse.Event{}, false, e.partial()
	}
	return sse.Event{}, false, e.call.Transport(e.ctx, err)
}

// Keep counts n bytes the codec keeps of the answer (text, tool-call
// arguments, one call's own fields) and fails, as a malformed answer, once
// they pass the call's AnswerLimit (MaxBody): a streamed answer holds no
// more than one read whole.
func (e *Events) Keep(n int) error {
	if e.kept += int64(n); e.kept > e.keptMax {
		return e.call.Errorf(llm.KindMalformed, 200, nil, "streamed answer larger than %d bytes", e.keptMax)
	}
	return nil
}

// callerCanceled reports whether the caller cancelled the exchange (not
// the idle timer, whose firing cancels it too).
func (e *Events) callerCanceled() bool {
	return errors.Is(e.ctx.Err(), context.Canceled) && (e.body == nil || !e.body.Fired())
}

// partial is the timeout of an answer cut after e.events events.
func (e *Events) partial() error {
	cause := fmt.Errorf("%w: %w", ErrPartialAnswer, e.ctx.Err())
	gap := e.call.now().Sub(e.last).Round(time.Millisecond)
	if e.body != nil && e.body.idle > 0 && gap > e.body.idle {
		return e.call.Errorf(llm.KindTimeout, 0, cause,
			"the answer began (%d events, %d bytes) but its last event came %s before the time was up, and since then only keep-alive lines: the model may be stuck",
			e.events, e.read, gap)
	}
	return e.call.Errorf(llm.KindTimeout, 0, cause,
		"the answer was still arriving when the time was up (%d events, %d bytes, the last %s before): the model is slow, not stuck; a longer timeout lets it finish",
		e.events, e.read, gap)
}

// Finishing tells that the answer is complete (a finish_reason, a
// stop_reason has come) and that the rest of the stream (usage, the end
// marker) may be missed: from now on the stream ends, as if the server
// had closed it, once FinishGrace passes without an event, comments and
// heartbeats not counting; a deadline or a broken connection from then
// on ends it too, and only the caller's cancellation is still an error.
// A server that sent the end of its answer but neither its end marker nor
// the end of the body used to cost the whole answer, lost to the idle
// timeout, or to the call's timeout while it sent heartbeats.
func (e *Events) Finishing() {
	if e.finishing {
		return // each event re-arms the grace (Next)
	}
	e.finishing, e.grace = true, true
	if e.body != nil {
		e.body.Tail()
	}
}

// Resume ends the grace of Finishing, for a server whose finish_reason
// came before the end of its answer (some proxies send one with every
// chunk): the gaps are bounded by the idle timeout again, so that a slow
// model's next token is waited for, and the idle timeout, a deadline or a
// broken connection still ends the stream with the answer so far, which
// the server said was finished.
func (e *Events) Resume() {
	if !e.grace {
		return
	}
	e.grace = false
	if e.body != nil {
		e.body.Untail()
	}
}

// All yields the events with data to the end of the stream; a read error
// is yielded once, as Next reports it, and ends the sequence.
func (e *Events) All() iter.Seq2[sse.Event, error] {
	return func(yield func(sse.Event, error) bool) {
		for {
			ev, ok, err := e.Next()
			if err != nil {
				yield(sse.Event{}, err)
				return
			}
			if !ok || !yield(ev, nil) {
				return
			}
		}
	}
}

package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// DefaultSSEKeepAlive is the silence after which a streamed answer sends an
// SSE comment, so that proxies and clients do not give up on a long tool.
const DefaultSSEKeepAlive = 15 * time.Second

// ProgressDropped is the Kind of the note a stream sends when its client
// read too slowly and progress was dropped (see DroppedNote).
const ProgressDropped = "dropped"

// DroppedNote says how much progress a stream dropped since its previous
// event: tool output first, whole events only beyond a bound. The answer
// itself is never dropped.
type DroppedNote struct {
	Kind               string `json:"kind"` // ProgressDropped
	DroppedOutputBytes int64  `json:"dropped_output_bytes"`
	DroppedEvents      int64  `json:"dropped_events"`
}

// streamHold bounds how long a stream holds back its first events (see
// sseWriter.held) when keepAlive is not shorter.
const streamHold = time.Second

// sseWriter writes one server-sent event stream. The 200 header goes out
// with the first event, so that a chat refused at once (busy, not ready)
// still answers with its own status. While held, events are kept instead
// of written, and the header waits too (see streamChat). After a failed
// write (the client left) later writes do nothing.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	// held keeps events in pending until start: the stream has not shown
	// anything the chat did yet, and a refusal may still take its place.
	held    bool
	pending [][]byte
	wrote   bool // something was written since streamChat last looked
	err     error
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// start sends the 200 header and the events held so far, once.
func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // reverse proxies: do not buffer the stream
	s.w.WriteHeader(http.StatusOK)
	pending := s.pending
	s.pending = nil
	for _, b := range pending {
		if s.err == nil {
			_, s.err = s.w.Write(b)
		}
	}
	s.flush()
}

// event writes one event; name "" writes a data-only event. v is encoded as
// JSON (one line), or written as is when it is a string.
func (s *sseWriter) event(name string, v any) {
	var data []byte
	switch v := v.(type) {
	case string:
		data = []byte(v)
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			data = []byte(fmt.Sprintf(`{"error":{"message":%q,"type":%q}}`, "encode event: "+err.Error(), ErrTypeInternal))
		}
	}
	var b []byte
	if name != "" {
		b = fmt.Appendf(b, "event: %s\n", name)
	}
	b = fmt.Appendf(b, "data: %s\n\n", data)
	if s.held && !s.started {
		s.pending = append(s.pending, b)
		return
	}
	s.start()
	if s.err == nil {
		_, s.err = s.w.Write(b)
	}
	s.flush()
}

// comment writes an SSE comment, which clients ignore.
func (s *sseWriter) comment(text string) {
	s.start()
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, ": %s\n\n", text)
	}
	s.flush()
}

func (s *sseWriter) flush() {
	s.wrote = true
	if s.err == nil {
		s.err = s.rc.Flush()
	}
}

// chatStream is what a streaming endpoint does with a running chat.
type chatStream struct {
	// progress receives each step, oldest first.
	progress func(actors.Progress)
	// dropped receives what was dropped since the previous step.
	dropped func(DroppedNote)
}

// streamChat runs in like Converse on a goroutine it owns and waits for it.
// Meanwhile the chat's progress goes to cs, and after keepAlive without
// anything written, an SSE comment goes to sw (which also sends the 200
// header if nothing did yet). Every progress event is handed on before the
// result is returned. A client that leaves ends ctx, which cancels the chat.
//
// The stream is held (sw writes nothing, not even the header) until the
// chat shows a real step: a completion that answered, a tool call, a
// dropped note, its answer; or until streamHold (at most keepAlive) has
// passed. The first llm_start is sent before the LLM call has a slot on
// its server, and a call refused there (the queue is full) or failing at
// once ends the chat with only llm_start and a failed llm_end: a chat that
// fails while held returns with sw not started, and the caller answers
// with the failure's own status (429 and Retry-After, 503, ...), as
// without streaming.
func (n *Node) streamChat(ctx context.Context, in ChatInput, sw *sseWriter, cs chatStream) (*actors.Answer, error) {
	q := newProgressQueue()
	in.Progress = q.push
	type result struct {
		ans *actors.Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		ans, err := n.Converse(ctx, in)
		done <- result{ans, err}
	}()
	sw.held = true
	hold := time.NewTimer(min(n.keepAlive, streamHold))
	defer hold.Stop()
	// idle fires keepAlive after the last write: a ticker that only
	// looked whether anything was written since its previous tick let a
	// write just after a tick be followed by up to twice keepAlive of
	// silence (28 s at 15 s), past a proxy's 20 or 30 s idle timeout.
	idle := time.NewTimer(n.keepAlive)
	defer idle.Stop()
	cs = cs.starting(sw)
	drain := func() { cs.drain(q) }
	for {
		select {
		case r := <-done:
			drain()
			if r.err == nil {
				sw.start()
			}
			return r.ans, r.err
		case <-q.ready:
			drain()
		case <-hold.C:
			// Whatever the chat is waiting for, it was not refused at
			// once: show what it did so far.
			sw.start()
		case <-idle.C:
			sw.comment("keep-alive")
		}
		if sw.wrote {
			sw.wrote = false
			idle.Reset(n.keepAlive)
		}
	}
}

// drain hands q's events on, oldest first, then a DroppedNote if anything
// was dropped since the last drain.
func (cs chatStream) drain(q *progressQueue) {
	events, out, dropped := q.take()
	for _, p := range events {
		cs.progress(p)
	}
	if out > 0 || dropped > 0 {
		cs.dropped(DroppedNote{Kind: ProgressDropped, DroppedOutputBytes: out, DroppedEvents: dropped})
	}
}

// starting wraps cs so that an event that shows the chat under way (any
// but an llm_start or a failed llm_end, and a dropped note) starts sw
// before it is written.
func (cs chatStream) starting(sw *sseWriter) chatStream {
	return chatStream{
		progress: func(p actors.Progress) {
			if !holdable(p) {
				sw.start()
			}
			cs.progress(p)
		},
		dropped: func(d DroppedNote) {
			sw.start()
			cs.dropped(d)
		},
	}
}

// holdable reports whether p may be held back: it shows nothing of the
// chat yet, and a refusal of its first LLM call may still replace the
// stream (see streamChat).
func holdable(p actors.Progress) bool {
	return p.Kind == actors.ProgressLLMStart || p.Kind == actors.ProgressLLMEnd && p.Status != wire.StatusSuccess
}

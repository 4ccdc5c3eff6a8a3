package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/evoclaw/evoclaw/actors"
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

// sseWriter writes one server-sent event stream. The 200 header goes out
// with the first event, so that a chat refused at once (busy, not ready)
// still answers with its own status. After a failed write (the client left)
// later writes do nothing.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	wrote   bool // something was written since the last keep-alive tick
	err     error
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

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
	s.start()
	if s.err != nil {
		return
	}
	if name != "" {
		_, s.err = fmt.Fprintf(s.w, "event: %s\n", name)
	}
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, "data: %s\n\n", data)
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
	tick := time.NewTicker(n.keepAlive)
	defer tick.Stop()
	drain := func() { cs.drain(q) }
	for {
		select {
		case r := <-done:
			drain()
			return r.ans, r.err
		case <-q.ready:
			drain()
		case <-tick.C:
			if !sw.wrote {
				sw.comment("keep-alive")
			}
			sw.wrote = false
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

package edge

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// Bounds of the progress reports of one agent, all calls together.
const (
	// StreamReportsPerSecond bounds the progress reports an agent sends
	// per second on average; StreamReportsBurst is the most it sends at
	// once.
	StreamReportsPerSecond = 20
	StreamReportsBurst     = 20
	// streamQueueLen bounds the progress reports waiting for the MQTT
	// client; beyond it they are not sent.
	streamQueueLen = 32
	// streamPublishTimeout bounds one progress publish.
	streamPublishTimeout = 2 * time.Second
)

// progressOut sends the progress reports of every call of an agent: it
// owns a bounded queue and the one goroutine (run) that publishes from it,
// at QoS 0. Nothing ever waits for it: a report that finds the agent's rate
// spent or the queue full is not sent, and its output stays with the call
// to go out later or be counted as not streamed.
type progressOut struct {
	lim     *rate.Limiter
	queue   chan []byte
	publish func(ctx context.Context, b []byte) error
	log     *slog.Logger
	logLim  *rate.Limiter // one log line per 10 s about failed publishes
	now     func() time.Time

	sent, refused, failed atomic.Int64
}

func newProgressOut(publish func(context.Context, []byte) error, log *slog.Logger) *progressOut {
	return &progressOut{
		lim:     rate.New(StreamReportsPerSecond, StreamReportsBurst),
		queue:   make(chan []byte, streamQueueLen),
		publish: publish,
		log:     log,
		logLim:  rate.New(0.1, 1),
		now:     time.Now,
	}
}

// offer queues one encoded progress report without waiting; false means it
// will not be sent.
func (o *progressOut) offer(b []byte, now time.Time) bool {
	if len(o.queue) == cap(o.queue) || !o.lim.Allow(now) {
		o.refused.Add(1)
		return false
	}
	select {
	case o.queue <- b:
		return true
	default:
		o.refused.Add(1)
		return false
	}
}

// run publishes queued reports until ctx ends.
func (o *progressOut) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case b := <-o.queue:
			pctx, cancel := context.WithTimeout(ctx, streamPublishTimeout)
			err := o.publish(pctx, b)
			cancel()
			if err == nil {
				o.sent.Add(1)
				continue
			}
			n := o.failed.Add(1)
			if o.logLim.Allow(o.now()) {
				o.log.Debug("progress report not sent", "err", err, "failed_total", n)
			}
		}
	}
}

// callStream forwards the output of one running tool call as progress
// reports: the tool's reading goroutines add to its chunker, and a
// goroutine of its own sends a chunk every StreamInterval at most. A nil
// *callStream streams nothing.
type callStream struct {
	requestID string
	out       *progressOut
	encode    func(wire.Progress) ([]byte, error)
	now       func() time.Time

	mu sync.Mutex // guards ch
	ch *chunker

	stop chan struct{} // closed by finish
	done chan struct{} // closed when run returns
}

// startStream starts streaming the output of request requestID when the
// command asked for it and the agent may; otherwise it returns nil.
func (a *Agent) startStream(requestID string, asked bool) *callStream {
	if !asked || a.cfg.Tools.DisableStreaming || a.progress == nil {
		return nil
	}
	return newCallStream(requestID, a.progress, streamLimits{}, func(p wire.Progress) ([]byte, error) {
		return a.encodeReport(wire.ReportProgress, p)
	})
}

// newCallStream starts the goroutine of a callStream; finish stops it.
func newCallStream(requestID string, out *progressOut, lim streamLimits, encode func(wire.Progress) ([]byte, error)) *callStream {
	s := &callStream{
		requestID: requestID,
		out:       out,
		encode:    encode,
		now:       time.Now,
		ch:        newChunker(lim),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	go s.run(s.ch.lim.Interval)
	return s
}

// context returns ctx carrying s's OutputFunc, or ctx itself when s is nil.
func (s *callStream) context(ctx context.Context) context.Context {
	if s == nil {
		return ctx
	}
	return skills.WithOutput(ctx, s.write)
}

// write is the call's skills.OutputFunc: it only copies into the chunker.
func (s *callStream) write(st proc.Stream, p []byte) {
	s.mu.Lock()
	s.ch.add(st, p)
	s.mu.Unlock()
}

func (s *callStream) run(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.flush(false)
		}
	}
}

// flush sends the chunk that is due, if any.
func (s *callStream) flush(final bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	c, ok := s.ch.next(now, final)
	if !ok {
		return
	}
	c.p.RequestID = s.requestID
	b, err := s.encode(c.p)
	if err != nil || !s.out.offer(b, now) {
		return // stays pending, or is counted as omitted by a later chunk
	}
	s.ch.commit(c, now)
}

// finish stops the call's goroutine and sends the final chunk, without
// waiting for it to be published. The tool has ended: nothing writes any
// more. Safe on a nil *callStream.
func (s *callStream) finish() {
	if s == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.flush(true)
}

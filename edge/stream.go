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
	// streamDrainWait bounds how long a finished call waits for its last
	// chunk to leave before its result is published, so that the chunk is
	// not overtaken by the result (and dropped by the orchestrator, which
	// no longer waits for the call). Only a call that streamed waits.
	streamDrainWait = 100 * time.Millisecond
)

// progressOut sends the progress reports of every call of an agent: it
// owns a bounded queue and the one goroutine (run) that publishes from it,
// at QoS 0. Nothing ever waits for it: a report that finds the agent's rate
// spent or the queue full is not sent, and its output stays with the call
// to go out later or be counted as not streamed.
type progressOut struct {
	lim     *rate.Limiter
	queue   chan queuedReport
	publish func(ctx context.Context, b []byte) error
	log     *slog.Logger
	logLim  *rate.Limiter // one log line per 10 s about failed publishes
	now     func() time.Time

	sent, refused, failed atomic.Int64
}

func newProgressOut(publish func(context.Context, []byte) error, log *slog.Logger) *progressOut {
	return &progressOut{
		lim:     rate.New(StreamReportsPerSecond, StreamReportsBurst),
		queue:   make(chan queuedReport, streamQueueLen),
		publish: publish,
		log:     log,
		logLim:  rate.New(0.1, 1),
		now:     time.Now,
	}
}

// queuedReport is one encoded progress report; sent, when set, is closed
// once it was published (or failed to be).
type queuedReport struct {
	b    []byte
	sent chan struct{}
}

// offer queues one encoded progress report without waiting; false means it
// will not be sent. sent, when not nil, is closed once it left.
func (o *progressOut) offer(b []byte, now time.Time, sent chan struct{}) bool {
	if len(o.queue) == cap(o.queue) || !o.lim.Allow(now) {
		o.refused.Add(1)
		return false
	}
	select {
	case o.queue <- queuedReport{b: b, sent: sent}:
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
		case q := <-o.queue:
			pctx, cancel := context.WithTimeout(ctx, streamPublishTimeout)
			err := o.publish(pctx, q.b)
			cancel()
			if q.sent != nil {
				close(q.sent)
			}
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

// flush sends the chunk that is due, if any. The channel it returns, when
// not nil, is closed once that chunk left.
func (s *callStream) flush(final bool) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	c, ok := s.ch.next(now, final)
	if !ok {
		return nil
	}
	c.p.RequestID = s.requestID
	b, err := s.encode(c.p)
	var sent chan struct{}
	if final {
		sent = make(chan struct{})
	}
	if err != nil || !s.out.offer(b, now, sent) {
		return nil // stays pending, or is counted as omitted by a later chunk
	}
	s.ch.commit(c, now)
	return sent
}

// finish stops the call's goroutine and sends the final chunk, waiting at
// most streamDrainWait for it to leave, so that the result published next
// does not overtake it. The tool has ended: nothing writes any more. Safe
// on a nil *callStream.
func (s *callStream) finish() {
	if s == nil {
		return
	}
	close(s.stop)
	<-s.done
	if sent := s.flush(true); sent != nil {
		t := time.NewTimer(streamDrainWait)
		defer t.Stop()
		select {
		case <-sent:
		case <-t.C:
		}
	}
}

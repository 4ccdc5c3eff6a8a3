package orchestrator

import (
	"sync"

	"github.com/evoclaw/evoclaw/actors"
)

// Bounds of a progressQueue.
const (
	// progressQueueEvents bounds queued events of one chat.
	progressQueueEvents = 1024
	// progressQueueOutput bounds the bytes of queued tool output.
	progressQueueOutput = 256 << 10
)

// progressQueue buffers one chat's progress events between the actors,
// which must never block, and the HTTP writer, which may be slow. It is
// bounded: tool output is dropped first (counted), and lifecycle events are
// dropped only beyond progressQueueEvents. Safe for concurrent use.
type progressQueue struct {
	mu     sync.Mutex // guards the fields below
	events []actors.Progress
	output int
	// droppedOutput counts output bytes dropped since the last take;
	// droppedEvents counts whole events.
	droppedOutput, droppedEvents int64

	// ready has a value when events are waiting.
	ready chan struct{}
}

func newProgressQueue() *progressQueue { return &progressQueue{ready: make(chan struct{}, 1)} }

// push queues p without blocking. It is an actors.ProgressFunc.
func (q *progressQueue) push(p actors.Progress) {
	q.mu.Lock()
	switch {
	case p.Kind == actors.ProgressToolOutput && (q.output+len(p.Output) > progressQueueOutput || len(q.events) >= progressQueueEvents):
		q.droppedOutput += int64(len(p.Output))
	case len(q.events) >= progressQueueEvents:
		q.droppedEvents++
	default:
		q.events = append(q.events, p)
		if p.Kind == actors.ProgressToolOutput {
			q.output += len(p.Output)
		}
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take returns the queued events, oldest first, and what was dropped since
// the last take.
func (q *progressQueue) take() (events []actors.Progress, droppedOutput, droppedEvents int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	events, droppedOutput, droppedEvents = q.events, q.droppedOutput, q.droppedEvents
	q.events, q.output, q.droppedOutput, q.droppedEvents = nil, 0, 0, 0
	return events, droppedOutput, droppedEvents
}

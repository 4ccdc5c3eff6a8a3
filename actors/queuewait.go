package actors

import (
	"sync/atomic"
	"time"
)

// QueueWait tells whoever sent a Chat how the chat fared in its
// conversation's queue (chats of one conversation run one at a time), so
// that a caller who gave up waiting can say why: the chat never started,
// or started late, behind another chat. The conversation writes it; any
// goroutine may read it. The zero value is ready for use; a nil *QueueWait
// records nothing and reports a chat that started at once.
type QueueWait struct {
	started atomic.Bool
	waited  atomic.Int64 // nanoseconds in the queue, once started
	behind  atomic.Bool
}

// Started reports whether the conversation began answering the chat, and
// how long the chat waited in the queue before it did.
func (w *QueueWait) Started() (waited time.Duration, ok bool) {
	if w == nil {
		return 0, true
	}
	return time.Duration(w.waited.Load()), w.started.Load()
}

// Behind reports whether the chat waited while another chat of its
// conversation ran (rather than only for the conversation's history to
// load).
func (w *QueueWait) Behind() bool { return w != nil && w.behind.Load() }

// start records that the chat began after waiting d.
func (w *QueueWait) start(d time.Duration) {
	if w == nil {
		return
	}
	w.waited.Store(int64(d))
	w.started.Store(true)
}

// wait records that the chat waits while another chat runs.
func (w *QueueWait) wait() {
	if w != nil {
		w.behind.Store(true)
	}
}

package actors

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// hotPool runs functions on goroutines that outlive them: a function goes
// to a goroutine that waits for work, or to a new one when none waits, so
// nothing ever waits for a free goroutine. A goroutine with nothing to do
// for idle ends.
//
// Why: protoactor starts a goroutine each time an idle mailbox gets a
// message, and the conversation starts one for each history write and
// completion. A new goroutine's stack is small; the actors' receive paths
// and SQLite's (transpiled C, deep frames) grow it by copying, several
// times per goroutine: about 10% of the orchestrator's CPU in a profile of
// `evoclaw bench` (runtime.newstack/copystack). A goroutine kept for the
// next function keeps its grown stack.
type hotPool struct {
	work chan func() // unbuffered: a send succeeds only if a goroutine waits
	idle time.Duration
	// live counts the pool's goroutines, started those ever started.
	live, started atomic.Int64
}

func newHotPool(idle time.Duration) *hotPool {
	return &hotPool{work: make(chan func()), idle: idle}
}

// hot is the pool of the actors of this package and their off-mailbox work.
// Goroutines idle for 5 s end, so an idle node keeps none.
var hot = newHotPool(5 * time.Second)

// Go runs fn on a waiting goroutine of p, or on a new one.
func (p *hotPool) Go(fn func()) {
	select {
	case p.work <- fn:
	default:
		p.live.Add(1)
		p.started.Add(1)
		go p.run(fn)
	}
}

func (p *hotPool) run(fn func()) {
	defer p.live.Add(-1)
	fn()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case fn := <-p.work:
			fn()
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
}

// hotDispatcher runs mailboxes on hot, with protoactor's default
// throughput (messages per turn before the mailbox yields).
type hotDispatcher struct{}

func (hotDispatcher) Schedule(fn func()) { hot.Go(fn) }
func (hotDispatcher) Throughput() int    { return 300 }

// onHot is the props option of every actor of this package.
var onHot = actor.WithDispatcher(hotDispatcher{})

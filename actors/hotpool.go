package actors

import (
	"slices"
	"sync"
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
	idle time.Duration
	mu   sync.Mutex // guards waiting
	// waiting are the goroutines waiting for work, the most recently
	// idle last. Work goes to the last: under a trickle of work the same
	// few goroutines take it and the others reach their idle time and
	// end. (Handed out oldest first, as a shared channel does, a trickle
	// of r functions a second keeps r times idle goroutines alive for
	// ever, each with its grown stack: 200 agents' one-second ticks kept
	// the 1,000 goroutines of a burst of conversations, 10 MB.)
	waiting []*hotWorker
	// live counts the pool's goroutines, started those ever started.
	live, started atomic.Int64
}

// hotWorker is one goroutine of the pool, as the pool hands it work.
type hotWorker struct {
	work chan func() // buffered (1): the pool never waits to hand work
}

func newHotPool(idle time.Duration) *hotPool {
	return &hotPool{idle: idle}
}

// HotIdle is how long a goroutine of the actors' pool waits for work
// before it ends, so an idle node keeps none.
const HotIdle = 5 * time.Second

// hot is the pool of the actors of this package and their off-mailbox work.
var hot = newHotPool(HotIdle)

// Go runs fn on the goroutine of p that waited least, or on a new one.
func (p *hotPool) Go(fn func()) {
	p.mu.Lock()
	if n := len(p.waiting); n > 0 {
		w := p.waiting[n-1]
		p.waiting[n-1] = nil
		p.waiting = p.waiting[:n-1]
		p.mu.Unlock()
		w.work <- fn
		return
	}
	p.mu.Unlock()
	p.live.Add(1)
	p.started.Add(1)
	go p.run(fn)
}

// waitingCount is how many goroutines wait for work.
func (p *hotPool) waitingCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}

func (p *hotPool) run(fn func()) {
	defer p.live.Add(-1)
	w := &hotWorker{work: make(chan func(), 1)}
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		fn()
		fn = nil
		t.Reset(p.idle)
		p.mu.Lock()
		p.waiting = append(p.waiting, w)
		p.mu.Unlock()
		select {
		case fn = <-w.work:
			continue
		case <-t.C:
		}
		p.mu.Lock()
		if i := slices.Index(p.waiting, w); i >= 0 {
			p.waiting = slices.Delete(p.waiting, i, i+1)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		// Handed work as the timer fired: it is in w.work or on its way.
		fn = <-w.work
	}
}

// hotDispatcher runs mailboxes on hot, with protoactor's default
// throughput (messages per turn before the mailbox yields).
type hotDispatcher struct{}

func (hotDispatcher) Schedule(fn func()) { hot.Go(fn) }
func (hotDispatcher) Throughput() int    { return 300 }

// onHot is the props option of every actor of this package.
var onHot = actor.WithDispatcher(hotDispatcher{})

// limited runs functions on hot, at most max at a time, in the order they
// came: the others wait in its queue, not on goroutines of their own.
//
// Why: a burst of new conversations each read their history at once, and
// the store serves reads on two connections. On hot, each read had a
// goroutine (blocked in database/sql for a connection), grown a stack
// deep enough for SQLite, and left the runtime a goroutine descriptor it
// never frees: 1,000 of each for 1,000 conversations.
//
// The queue holds at most one function per conversation actor (one
// history read each), so it is bounded by the conversations in memory.
type limited struct {
	max     int
	mu      sync.Mutex // guards running and queue
	running int
	queue   []func()
}

func newLimited(max int) *limited { return &limited{max: max} }

// Go runs fn now if fewer than max run, else once the others before it ran.
func (l *limited) Go(fn func()) {
	l.mu.Lock()
	if l.running < l.max {
		l.running++
		l.mu.Unlock()
		hot.Go(func() { l.work(fn) })
		return
	}
	l.queue = append(l.queue, fn)
	l.mu.Unlock()
}

// work runs fn, then what is queued, until the queue is empty.
func (l *limited) work(fn func()) {
	for {
		fn()
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.running--
			l.queue = nil // a burst's array does not stay
			l.mu.Unlock()
			return
		}
		fn = l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.mu.Unlock()
	}
}

package broker

import (
	"sync"
	"time"
)

// Refusal log limits: a client hammering the broker with refused requests
// must not fill the disk of a Pi with log lines.
const (
	refusalBurst  = 20
	refusalWindow = 10 * time.Second
)

// refusalLimiter lets refusalBurst log lines through per refusalWindow and
// counts the rest, reported with the next line that gets through.
type refusalLimiter struct {
	mu         sync.Mutex // guards the fields below
	windowEnds time.Time
	n          int
	suppressed int
}

// allow reports whether to log now, and how many lines were suppressed since
// the last one logged.
func (l *refusalLimiter) allow(now time.Time) (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.windowEnds) {
		l.windowEnds, l.n = now.Add(refusalWindow), 0
	}
	if l.n >= refusalBurst {
		l.suppressed++
		return 0, false
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return suppressed, true
}

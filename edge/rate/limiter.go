package rate

import (
	"sync"
	"time"
)

// Limiter is a token bucket: it holds up to a burst of tokens, starts full
// and gains a rate of tokens per second. An event costs one token (Allow),
// a message of n bytes n tokens (Take). Build it with New.
type Limiter struct {
	perSec float64
	burst  float64

	mu     sync.Mutex // guards tokens and last
	tokens float64
	last   time.Time // when tokens was last brought up to date; zero: never
}

// New returns a full limiter gaining perSec tokens per second and holding
// at most burst tokens. A burst below 1 is 1, so that one token can ever be
// taken; perSec zero or less allows only the first burst.
func New(perSec float64, burst int) *Limiter {
	b := float64(max(burst, 1))
	return &Limiter{perSec: max(perSec, 0), burst: b, tokens: b}
}

// Allow reports whether one event may happen at now and, if so, counts it:
// it is Take(now, 1).
func (l *Limiter) Allow(now time.Time) bool { return l.Take(now, 1) }

// Take takes n tokens at now and reports whether there were enough. A take
// that finds too few tokens takes none; one of more than the burst never
// succeeds.
func (l *Limiter) Take(now time.Time, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	if l.tokens < float64(n) {
		return false
	}
	l.tokens -= float64(n)
	return true
}

// Has reports whether n tokens are there at now, taking none.
func (l *Limiter) Has(now time.Time, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	return l.tokens >= float64(n)
}

// Full reports whether, at now, the limiter is as it was when new: a full
// limiter can be forgotten and built again without changing what it allows.
func (l *Limiter) Full(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	return l.tokens >= l.burst
}

// refill adds the tokens earned since last. l.mu must be held.
func (l *Limiter) refill(now time.Time) {
	if !l.last.IsZero() && now.After(l.last) {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.perSec)
	}
	if l.last.IsZero() || now.After(l.last) {
		l.last = now
	}
}

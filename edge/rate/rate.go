// Package rate is a token-bucket rate limiter whose clock is the caller's:
// every method takes the current time, so tests drive it without sleeping.
//
// # Concurrency
//
// A Limiter and a Keyed are safe for concurrent use.
package rate

import (
	"sync"
	"time"
)

// Limiter allows events at Rate per second on average, in bursts of at
// most Burst. Build it with New.
type Limiter struct {
	perSec float64
	burst  float64

	mu     sync.Mutex // guards tokens and last
	tokens float64
	last   time.Time // when tokens was last brought up to date; zero: never
}

// New returns a limiter allowing perSec events per second and bursts of
// burst events, starting full. A burst below 1 is 1; perSec zero or less
// allows only the first burst.
func New(perSec float64, burst int) *Limiter {
	b := float64(max(burst, 1))
	return &Limiter{perSec: max(perSec, 0), burst: b, tokens: b}
}

// Allow reports whether one event may happen at now and, if so, counts it.
// A now earlier than a previous call's counts as that call's time.
func (l *Limiter) Allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
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

// Keyed keeps one Limiter per key (an agent id, say) for at most MaxKeys
// keys, so a stream of made-up keys cannot grow it without bound. Build it
// with NewKeyed.
type Keyed struct {
	perSec  float64
	burst   int
	maxKeys int

	mu   sync.Mutex // guards lims
	lims map[string]*Limiter
}

// NewKeyed returns a per-key limiter: each key gets New(perSec, burst),
// and at most maxKeys keys are tracked (at least 1).
func NewKeyed(perSec float64, burst, maxKeys int) *Keyed {
	return &Keyed{perSec: perSec, burst: burst, maxKeys: max(maxKeys, 1), lims: map[string]*Limiter{}}
}

// Allow reports whether one event of key may happen at now. A key not seen
// before while MaxKeys keys are tracked first evicts the keys whose limiters
// are full (forgetting them changes nothing); if none is, the event is
// refused.
func (k *Keyed) Allow(key string, now time.Time) bool {
	k.mu.Lock()
	l, ok := k.lims[key]
	if !ok {
		if len(k.lims) >= k.maxKeys {
			for id, old := range k.lims {
				if old.Full(now) {
					delete(k.lims, id)
				}
			}
		}
		if len(k.lims) >= k.maxKeys {
			k.mu.Unlock()
			return false
		}
		l = New(k.perSec, k.burst)
		k.lims[key] = l
	}
	k.mu.Unlock()
	return l.Allow(now)
}

// Len is the number of keys tracked.
func (k *Keyed) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.lims)
}

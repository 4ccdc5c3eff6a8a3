package rate

import (
	"sync"
	"time"
)

// Keyed keeps one Limiter per key (an agent id, say) for a bounded number
// of keys, so a stream of made-up keys cannot grow it without bound. Build it
// with NewKeyed.
type Keyed struct {
	perSec float64
	burst  int

	mu   sync.Mutex // guards lims
	lims keySet[*Limiter]
}

// NewKeyed returns a per-key limiter: each key gets New(perSec, burst),
// and at most maxKeys keys are tracked (at least 1).
func NewKeyed(perSec float64, burst, maxKeys int) *Keyed {
	return &Keyed{perSec: perSec, burst: burst, lims: newKeySet[*Limiter](max(maxKeys, 1))}
}

// Allow reports whether one event of key may happen at now. A key not seen
// before while maxKeys keys are tracked first evicts the keys whose limiters
// are full (forgetting them changes nothing); if none is, the event is
// refused.
func (k *Keyed) Allow(key string, now time.Time) bool {
	k.mu.Lock()
	l, ok := k.lims.get(key,
		func(old *Limiter) bool { return old.Full(now) },
		func() *Limiter { return New(k.perSec, k.burst) })
	k.mu.Unlock()
	return ok && l.Allow(now)
}

// Has reports whether key may have one more event at now, counting none:
// true for a key not tracked, whose limiter would start full.
func (k *Keyed) Has(key string, now time.Time) bool {
	k.mu.Lock()
	l, ok := k.lims.m[key]
	k.mu.Unlock()
	return !ok || l.Has(now, 1)
}

// Len is the number of keys tracked.
func (k *Keyed) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.lims.m)
}

package ratelimit

import "time"

// Bucket is a token bucket: it holds up to Burst tokens and gains Rate
// tokens per second. A take that finds too few tokens takes none.
type Bucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time // when tokens was last brought up to date
}

// NewBucket returns a full bucket refilled at rate tokens per second, holding
// at most burst tokens (burst below 1 is raised to 1 so that one token can
// ever be taken).
func NewBucket(rate, burst float64) *Bucket {
	burst = max(burst, 1)
	return &Bucket{rate: rate, burst: burst, tokens: burst}
}

// Take takes n tokens at time now and reports whether there were enough. A
// request for more than the burst can never succeed.
func (b *Bucket) Take(now time.Time, n float64) bool {
	b.refill(now)
	if b.tokens < n {
		return false
	}
	b.tokens -= n
	return true
}

func (b *Bucket) refill(now time.Time) {
	if b.last.IsZero() {
		b.last = now
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
}

// Has reports whether n tokens are there at now, taking none.
func (b *Bucket) Has(now time.Time, n float64) bool {
	b.refill(now)
	return b.tokens >= n
}

// full reports whether the bucket would be full at now: a key whose buckets
// are all full carries no state worth keeping.
func (b *Bucket) full(now time.Time) bool {
	b.refill(now)
	return b.tokens >= b.burst
}

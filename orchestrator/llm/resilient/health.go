package resilient

import (
	"errors"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Health is a snapshot of one link for status pages.
type Health struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	// ConsecutiveFailures counts failed calls since the last success.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// CoolingUntil is when the link is tried again; zero when it is not
	// cooling down.
	CoolingUntil time.Time     `json:"cooling_until,omitzero"`
	LastKind     llm.ErrorKind `json:"last_kind,omitempty"`
	LastError    string        `json:"last_error,omitempty"`
	// NotAnsweringSince is when a check of the link's server (the
	// capability probe of a local server or the look-up of a hosted one's
	// host name, repeated in the background) first found nobody answering, NotAnswering how ("connection
	// refused") and CheckedAt when it last looked; all zero once the
	// server answers a check or a call.
	NotAnsweringSince time.Time `json:"not_answering_since,omitzero"`
	NotAnswering      string    `json:"not_answering,omitempty"`
	CheckedAt         time.Time `json:"checked_at,omitzero"`
	// InFlight and Waiting are the link limiter's calls.
	InFlight int `json:"in_flight"`
	Waiting  int `json:"waiting"`
}

// Health reports every link in chain order.
func (c *Chain) Health() []Health {
	now := c.o.Now()
	out := make([]Health, len(c.links))
	for i, l := range c.links {
		l.mu.Lock()
		h := Health{Provider: l.Provider.Name(), Model: l.Model, ConsecutiveFailures: l.consecutive,
			LastKind: l.lastKind, LastError: l.lastErr, InFlight: l.Limiter.InFlight(), Waiting: l.Limiter.Waiting(),
			NotAnsweringSince: l.downSince, NotAnswering: l.downCause, CheckedAt: l.downChecked}
		if now.Before(l.coolUntil) {
			h.CoolingUntil = l.coolUntil
		}
		l.mu.Unlock()
		out[i] = h
	}
	return out
}

// Saturated reports whether every link's queue is full (Limiter.Full), so
// that a call made now would fail overloaded without being sent.
func (c *Chain) Saturated() bool {
	for _, l := range c.links {
		if !l.Limiter.Full() {
			return false
		}
	}
	return true
}

func (l *link) label() string {
	if l.Model == "" {
		return l.Provider.Name()
	}
	return l.Provider.Name() + ":" + l.Model
}

func (l *link) cooling(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Before(l.coolUntil)
}

func (l *link) succeeded() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.consecutive = 0
	l.coolUntil = time.Time{}
}

// MaxRateLimitCooldown bounds how long a rate limit's Retry-After keeps a
// link cooling. A server's word is not enough to take a model out for
// longer: one 429 saying "until 2100" sent every chat to the fallback
// models (a hosted API, when the first is a local server) until restart.
const MaxRateLimitCooldown = time.Hour

// failed records a failed call. Failures that say nothing about the link
// (the request itself was wrong, our own queue was full, the caller gave
// up) leave its health alone.
func (c *Chain) failed(l *link, err error) {
	kind := llm.KindOf(err)
	switch kind {
	case llm.KindBadRequest, llm.KindOverloaded, llm.KindCanceled:
		return
	}
	now := c.o.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.consecutive++
	l.lastKind = kind
	l.lastErr = llm.Excerpt(err.Error(), 300)
	until := l.coolUntil
	if l.consecutive >= c.o.FailureThreshold {
		until = now.Add(c.o.Cooldown)
	}
	if ra := min(retryAfter(err), MaxRateLimitCooldown); kind == llm.KindRateLimited && ra > 0 && now.Add(ra).After(until) {
		until = now.Add(ra)
	}
	if until.After(l.coolUntil) {
		l.coolUntil = until
		c.o.Logger.Warn("llm link cooling down", logProvider, l.Provider.Name(), logModel, l.Model, logUntil, until, logKind, kind)
	}
}

func retryAfter(err error) time.Duration {
	if e, ok := asError(err); ok {
		return e.RetryAfter
	}
	return 0
}

func asError(err error) (*llm.Error, bool) {
	var e *llm.Error
	ok := errors.As(err, &e)
	return e, ok
}

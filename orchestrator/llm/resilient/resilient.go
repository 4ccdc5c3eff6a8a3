// Package resilient wraps LLM providers in a fallback chain: each link (a
// provider and a model) gets a per-attempt timeout, retries with
// exponential backoff and jitter on rate limits, server and network errors
// (honouring Retry-After), a bounded number of calls in flight, and health
// tracking that skips a link which keeps failing for a cool-down.
//
// # What is retried
//
// A link is retried (up to Link.Retries more times) on llm.Error values
// whose Retryable is true: rate_limited (429, 529), server (5xx, 409) and
// network errors, and HTTP 408. Other 4xx, auth failures, malformed answers
// and per-attempt timeouts are not retried on the same link: the chain
// moves to the next link. A Retry-After longer than Options.MaxRetryAfter,
// or one that would outlast the caller's deadline, also moves on at once.
// The caller's own cancellation or deadline ends the call immediately.
//
// # Health
//
// Each link counts consecutive failed calls (bad_request, overloaded and
// the caller's cancellation do not count: they say nothing of the link).
// At FailureThreshold the link cools down for Cooldown and is skipped; a
// 429's Retry-After also cools it until then. When the cool-down is over
// the link is tried again; one success clears it. If every link is cooling
// down, all are tried in order anyway: a Pi with one local model must
// never refuse to ask it.
//
// # Concurrency
//
// A Chain is safe for concurrent use. Calls queue for a link's Limiter
// while honouring their context. Calls run nothing in the background; what
// the chain's builder starts with Chain.Go (capability probes, warm-ups,
// the re-checks that report NotAnswering) stops at Chain.Close.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package resilient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/edge/pause"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Defaults of Options and Link.
const (
	DefaultTimeout          = 2 * time.Minute
	DefaultBackoff          = time.Second
	DefaultMaxBackoff       = 30 * time.Second
	DefaultMaxRetryAfter    = time.Minute
	DefaultFailureThreshold = 3
	DefaultCooldown         = time.Minute
)

// Log keys.
const (
	logProvider = "provider"
	logModel    = "model"
	logAttempt  = "attempt"
	logKind     = "kind"
	logWait     = "wait"
	logErr      = "err"
	logUntil    = "until"
)

// Link is one model of a chain.
type Link struct {
	Provider llm.Provider
	// Model replaces Request.Model for this link; "" keeps the request's.
	Model string
	// Timeout bounds one attempt (default DefaultTimeout).
	Timeout time.Duration
	// Retries is how many more attempts a retryable failure gets on this
	// link before the chain moves on (0: none).
	Retries int
	// Limiter bounds calls in flight; links on one server share one. nil
	// means unbounded.
	Limiter *Limiter
	// LoadTimeout bounds an attempt while the link is cold: before its
	// first success and after a network failure of its server (see
	// coldstart.go). Zero or less than Timeout means Timeout.
	LoadTimeout time.Duration
	// ColdAfter, when positive, makes the link cold again after that long
	// without a successful attempt: Ollama unloads an idle model after its
	// keep_alive (5 minutes by default).
	ColdAfter time.Duration
	// OnWarm, when set, is called from the calling goroutine when a link
	// that went cold because its server failed answers again (a reconnect);
	// it must return quickly.
	OnWarm func()
	// OnUnreachable, when set, is called from the calling goroutine when
	// an attempt on the link, or on another link of its server (same
	// Limiter), found nobody answering there (a network failure: the
	// server went away), so that whoever built the chain checks the
	// server in the background and reports it (reach.go); it must return
	// quickly.
	OnUnreachable func()
}

// Options tune a Chain. The zero value is ready for use.
type Options struct {
	// Backoff is the first retry delay (default DefaultBackoff); each
	// retry doubles it up to MaxBackoff (default DefaultMaxBackoff). The
	// wait is drawn between half and all of it (jitter).
	Backoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the chain waits for on one
	// link (default DefaultMaxRetryAfter); longer ones move to the next.
	MaxRetryAfter time.Duration
	// FailureThreshold is the number of consecutive failed calls after
	// which a link cools down (default DefaultFailureThreshold).
	FailureThreshold int
	// Cooldown is how long a failing link is skipped (default
	// DefaultCooldown).
	Cooldown time.Duration
	// Now, Sleep and Jitter are seams for tests: the clock, a sleep that
	// returns ctx's error when ctx ends first, and a source in [0, 1).
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func() float64
	// Logger receives retries, fallbacks and cool-downs (default: discard).
	Logger *slog.Logger
	// OnAttempt, when set, is called after every exchange, failed ones
	// included, from the calling goroutine: a hook for an audit table of
	// LLM calls or metrics. It must return quickly.
	OnAttempt func(Attempt)
}

// Attempt describes one exchange with one model.
type Attempt struct {
	Provider string
	// Model is the model asked for; Response.Model may name it more
	// precisely on success.
	Model string
	// Try counts attempts on this model within one call, from 1.
	Try     int
	Latency time.Duration
	// Usage is the answer's token count; zero on failure.
	Usage llm.Usage
	// Err is nil on success; Kind and Status describe it otherwise.
	Err    error
	Kind   llm.ErrorKind
	Status int
}

// Chain is an llm.Provider that tries its links in order.
type Chain struct {
	o     Options
	links []*link
	bg    background
}

var _ llm.Provider = (*Chain)(nil)

// link is a Link with its health.
type link struct {
	Link
	mu          sync.Mutex // guards the fields below
	consecutive int
	coolUntil   time.Time
	lastKind    llm.ErrorKind
	lastErr     string
	// downSince, downChecked and downCause are the outage reported by
	// NotAnswering (reach.go); zero while the server answers.
	downSince, downChecked time.Time
	downCause              string
	// warm and restarted are the cold-start state (coldstart.go).
	warm, restarted atomic.Bool
	lastOK          atomic.Int64 // unix nanoseconds of the last success
}

// New builds a chain of at least one link.
func New(links []Link, o Options) (*Chain, error) {
	if len(links) == 0 {
		return nil, errors.New("llm chain: no providers")
	}
	defaults.Positive(&o.Backoff, DefaultBackoff)
	defaults.Positive(&o.MaxBackoff, DefaultMaxBackoff)
	defaults.Positive(&o.MaxRetryAfter, DefaultMaxRetryAfter)
	defaults.Positive(&o.FailureThreshold, DefaultFailureThreshold)
	defaults.Positive(&o.Cooldown, DefaultCooldown)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = pause.For
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Chain{o: o}
	for i, l := range links {
		if l.Provider == nil {
			return nil, fmt.Errorf("llm chain: link %d has no provider", i)
		}
		defaults.Positive(&l.Timeout, DefaultTimeout)
		if l.Retries < 0 {
			l.Retries = 0
		}
		c.links = append(c.links, &link{Link: l})
	}
	return c, nil
}

// Name lists the links: "openai:qwen2.5:1.5b -> anthropic:claude-haiku-4-5".
func (c *Chain) Name() string {
	names := make([]string, len(c.links))
	for i, l := range c.links {
		names[i] = l.Provider.Name()
		if l.Model != "" {
			names[i] += ":" + l.Model
		}
	}
	return strings.Join(names, " -> ")
}

// Complete asks the links in order until one answers. The response's
// Attempts counts every HTTP exchange made; its Provider and Model name the
// link that answered. On failure the error is the last link's (so
// llm.KindOf names it), annotated with the others'.
func (c *Chain) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	order := c.order()
	attempts := 0
	var failures []string
	var failed []llm.FailedAttempt
	var last error
	for _, l := range order {
		resp, n, err := c.tryLink(ctx, l, req, &failed)
		attempts += n
		if err == nil {
			l.succeeded()
			resp.Attempts, resp.Failed = attempts, failed
			return resp, nil
		}
		last = err
		if cerr := ctx.Err(); cerr != nil {
			if k := llm.KindOf(err); k == llm.KindTimeout || k == llm.KindCanceled {
				return llm.Response{}, err
			}
			// The caller gave up while the chain waited to retry.
			return llm.Response{}, &llm.Error{Kind: llm.KindOf(cerr), Provider: l.Provider.Name(), Model: l.Model,
				Message: fmt.Sprintf("gave up after %d attempts", attempts), Err: err}
		}
		c.failed(l, err)
		failures = append(failures, fmt.Sprintf("%s: %s", l.label(), llm.KindOf(err)))
		c.o.Logger.Warn("llm link failed", logProvider, l.Provider.Name(), logModel, l.Model, logKind, llm.KindOf(err), logErr, err)
	}
	if len(failures) > 1 {
		return llm.Response{}, fmt.Errorf("all %d llm providers failed (%s): %w", len(failures), strings.Join(failures, "; "), last)
	}
	return llm.Response{}, last
}

// order is the links not cooling down, or all of them if every one is.
func (c *Chain) order() []*link {
	now := c.o.Now()
	var ready []*link
	for _, l := range c.links {
		if !l.cooling(now) {
			ready = append(ready, l)
		}
	}
	if len(ready) == 0 {
		return c.links
	}
	return ready
}

// tryLink makes up to 1+Retries attempts on one link, adding each sent
// one that failed to failed.
func (c *Chain) tryLink(ctx context.Context, l *link, req llm.Request, failed *[]llm.FailedAttempt) (llm.Response, int, error) {
	if l.Model != "" {
		req.Model = l.Model
	}
	n := 0
	for attempt := 0; ; attempt++ {
		start := c.o.Now()
		resp, sent, err := c.attempt(ctx, l, req)
		if sent {
			n++
			end := c.o.Now()
			c.observe(l, req.Model, attempt+1, end.Sub(start), resp, err)
			if err != nil {
				*failed = append(*failed, llm.FailedAttempt{Provider: l.Provider.Name(), Model: req.Model, End: end,
					Latency: end.Sub(start), Kind: llm.KindOf(err), Error: err.Error()})
			}
		}
		if err == nil {
			return resp, n, nil
		}
		var le *llm.Error
		errors.As(err, &le)
		if ctx.Err() != nil || le == nil || !le.Retryable() || attempt >= l.Retries {
			return llm.Response{}, n, err
		}
		wait := c.backoff(attempt)
		if le.RetryAfter > 0 {
			if le.RetryAfter > c.o.MaxRetryAfter {
				return llm.Response{}, n, err
			}
			wait = max(wait, le.RetryAfter)
		}
		if dl, ok := ctx.Deadline(); ok && c.o.Now().Add(wait).After(dl) {
			return llm.Response{}, n, err
		}
		c.o.Logger.Info("llm retry", logProvider, l.Provider.Name(), logModel, req.Model, logAttempt, attempt+2, logKind, le.Kind, logWait, wait, logErr, err)
		if serr := c.o.Sleep(ctx, wait); serr != nil {
			return llm.Response{}, n, err
		}
	}
}

// attempt is one exchange under the link's limiter and timeout; sent is
// false when it never got a slot.
func (c *Chain) attempt(ctx context.Context, l *link, req llm.Request) (resp llm.Response, sent bool, err error) {
	release, err := l.Limiter.Acquire(ctx)
	if err != nil {
		kind := llm.KindOverloaded
		if !errors.Is(err, ErrQueueFull) {
			kind = llm.KindOf(err)
		}
		return llm.Response{}, false, &llm.Error{Kind: kind, Provider: l.Provider.Name(), Model: req.Model, Message: "waiting for a free call slot", Err: err}
	}
	defer release()
	timeout, cold := l.attemptTimeout(c.o.Now())
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err = l.Provider.Complete(actx, req)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		err = timeoutError(l, req.Model, timeout, cold, err)
	}
	if ctx.Err() == nil {
		c.warmth(l, err)
	}
	if err == nil && resp.Provider == "" {
		resp.Provider = l.Provider.Name()
	}
	return resp, true, err
}

// observe reports one exchange to OnAttempt.
func (c *Chain) observe(l *link, model string, try int, latency time.Duration, resp llm.Response, err error) {
	if c.o.OnAttempt == nil {
		return
	}
	a := Attempt{Provider: l.Provider.Name(), Model: model, Try: try, Latency: latency, Usage: resp.Usage, Err: err}
	if err != nil {
		a.Kind = llm.KindOf(err)
		var le *llm.Error
		if errors.As(err, &le) {
			a.Status = le.Status
		}
	} else if resp.Latency > 0 {
		a.Latency = resp.Latency
	}
	c.o.OnAttempt(a)
}

// backoff is the delay before retry number attempt+1: Backoff doubled per
// attempt, capped, then drawn between half and all of it.
func (c *Chain) backoff(attempt int) time.Duration {
	d := c.o.Backoff
	for i := 0; i < attempt && d < c.o.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.o.MaxBackoff)
	return d/2 + time.Duration(c.o.Jitter()*float64(d/2))
}

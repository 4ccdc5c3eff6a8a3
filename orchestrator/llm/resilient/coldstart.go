package resilient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
)

// Cold starts. A local server loads a model on its first request (Ollama,
// llama-swap) or after a restart, which takes tens of seconds to minutes
// on a Raspberry Pi before the first token. A link is cold until an
// attempt on it succeeds, and again after a network failure (connection
// refused or reset: the server went away, and the model it comes back with
// must load again; every link sharing the failed link's Limiter, that is
// the same server, turns cold). An attempt on a cold link is bounded by
// Link.LoadTimeout instead of Link.Timeout. With Link.ColdAfter, a link
// idle for that long is cold again (the server may have unloaded it).

// Log keys of cold starts.
const (
	logTimeout = "timeout"
	logLatency = "latency"
)

// attemptTimeout is the bound of the next attempt on l.
func (l *link) attemptTimeout(now time.Time) (time.Duration, bool) {
	if l.LoadTimeout <= l.Timeout {
		return l.Timeout, false
	}
	idle := l.ColdAfter > 0 && now.Sub(time.Unix(0, l.lastOK.Load())) > l.ColdAfter
	if l.warm.Load() && !idle {
		return l.Timeout, false
	}
	return l.LoadTimeout, true
}

// warmth updates the cold state of l after an attempt that was sent: a
// success warms it (calling OnWarm after a detected restart), a network
// failure cools every link of its server. Any answer, an HTTP error status
// too, clears an outage reported by NotAnswering.
func (c *Chain) warmth(l *link, err error) {
	if err == nil {
		l.lastOK.Store(c.o.Now().UnixNano())
		l.answered()
		if !l.warm.Swap(true) && l.restarted.Swap(false) && l.OnWarm != nil {
			l.OnWarm()
		}
		return
	}
	switch llm.KindOf(err) {
	case llm.KindNetwork:
	case llm.KindTimeout, llm.KindCanceled:
		return
	default:
		// An HTTP error status is an answer: the server is there. (Other
		// errors may come from a wrapper that sent nothing.)
		if e, ok := asError(err); ok && e.Status > 0 {
			l.answered()
		}
		return
	}
	for _, o := range c.links {
		if o == l || (l.Limiter != nil && o.Limiter == l.Limiter) {
			// Also when it never answered: the probe that ran at start may
			// have failed too, so the first answer counts as a reconnect.
			o.restarted.Store(true)
			if o.warm.Swap(false) {
				c.o.Logger.Info("llm server unreachable; next call allows for a model load", logProvider, o.Provider.Name(), logModel, o.Model, logTimeout, max(o.LoadTimeout, o.Timeout))
			}
			if o.OnUnreachable != nil {
				o.OnUnreachable()
			}
		}
	}
}

// timeoutError names the bound that cut an attempt, and whether the
// answer had begun (the cause then says whether it was still arriving)
// or not (a model that is loading, stuck, or slow to read the prompt).
func timeoutError(l *link, model string, d time.Duration, cold bool, err error) error {
	msg := fmt.Sprintf("no answer within the per-call timeout %s", d)
	switch {
	case errors.Is(err, httpc.ErrPartialAnswer):
		msg = fmt.Sprintf("answer not complete within the per-call timeout %s", d)
		if cold {
			msg = fmt.Sprintf("answer not complete within the load timeout %s", d)
		}
	case cold:
		msg = fmt.Sprintf("no answer within the load timeout %s (first call, the model may still be loading)", d)
	}
	return &llm.Error{Kind: llm.KindTimeout, Provider: l.Provider.Name(), Model: model, Message: msg, Err: err}
}

// WarmupPrompt is what WarmUp sends: one short user message, one token of
// answer.
var WarmupPrompt = llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Hi"}}, MaxTokens: 1}

// WarmUp sends WarmupPrompt to link i (in chain order) so that the server
// loads its model before the first real call, under the link's limiter and
// its load timeout. It is not retried, not reported to OnAttempt and does
// not count for health; a success warms the link.
func (c *Chain) WarmUp(ctx context.Context, i int) error {
	if i < 0 || i >= len(c.links) {
		return fmt.Errorf("warm up link %d: the chain has %d links", i, len(c.links))
	}
	l := c.links[i]
	req := WarmupPrompt
	req.Model = l.Model
	start := c.o.Now()
	_, _, err := c.attempt(ctx, l, req)
	if err != nil {
		return fmt.Errorf("warm up %s: %w", l.label(), err)
	}
	c.o.Logger.Info("llm model warmed up", logProvider, l.Provider.Name(), logModel, l.Model, logLatency, c.o.Now().Sub(start))
	return nil
}

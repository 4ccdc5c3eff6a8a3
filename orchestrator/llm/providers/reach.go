package providers

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/probe"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
)

// Re-checks of a local model server that did not answer the capability
// probe. It may start after the node (both at boot) and load a model for
// minutes: the node does not give up on it, and does not ask it more than
// once per ReprobeMax. Only a local base URL (llm.IsLocalURL) that is
// probed is watched so: a hosted API (probe = "on") is probed once, as
// before, gets no request just for status, and is not marked down by a
// probe (at boot the network may not be up yet; its calls tell).
const (
	logNext = "next"
	// DefaultReprobe is the first wait before probing again; each further
	// miss doubles it up to ReprobeMax.
	DefaultReprobe = 5 * time.Second
	ReprobeMax     = time.Minute
)

// watch probes the model until its server answers, backing off between
// misses, and reports each miss and the answer on the chain's link. One
// watch runs per model at a time; reprobe wakes it.
func (t *tuner) watch(chain *resilient.Chain) func(ctx context.Context) {
	return func(ctx context.Context) {
		if t.watching.Swap(true) {
			select {
			case t.wake <- struct{}{}:
			default:
			}
			return
		}
		defer t.watching.Store(false)
		wait := t.reprobe0
		watched := llm.IsLocalURL(t.e.BaseURL)
		for miss := 0; ; miss++ {
			err := t.probe(ctx)
			if ctx.Err() != nil {
				return
			}
			cause, down := notAnswering(err, t.e.ProbeTimeout.Duration)
			switch {
			case err != nil && miss == 0:
				// A warning: a server that does not answer here fails the calls
				// too (the node still starts, and asks again in the background).
				t.log.Warn("llm capability probe got no answer: is the model server running, and is [llm] base_url right? Keeping the configured settings",
					logBaseURL, t.e.BaseURL, logErr, err)
			case err != nil:
				t.log.Debug("llm server still not answering", logBaseURL, t.e.BaseURL, logErr, err, logNext, wait)
			case miss > 0:
				t.log.Info("llm server answers", logBaseURL, t.e.BaseURL)
			}
			if !down || !watched {
				if err == nil {
					chain.Answering(t.link)
				}
				return
			}
			chain.NotAnswering(t.link, cause)
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-t.wake:
				timer.Stop()
			case <-timer.C:
			}
			wait = min(2*wait, ReprobeMax)
		}
	}
}

// notAnswering tells whether a probe's error says nobody answered at the
// server's address (probe.ErrNoServer; down is false for any HTTP answer,
// an error status too), and how, in a few words for status pages.
func notAnswering(err error, timeout time.Duration) (cause string, down bool) {
	var dns *net.DNSError
	var op *net.OpError
	var ue *url.Error
	switch {
	case !errors.Is(err, probe.ErrNoServer):
		return "", false
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "host " + dns.Name + " not found", true
		}
		return "host " + dns.Name + " not resolved: " + dns.Err, true
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within probe_timeout " + timeout.String(), true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "connection closed without an answer", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable", true
	case errors.As(err, &op):
		return op.Err.Error(), true
	case errors.As(err, &ue):
		return llm.Excerpt(ue.Err.Error(), 120), true
	}
	return llm.Excerpt(err.Error(), 120), true
}

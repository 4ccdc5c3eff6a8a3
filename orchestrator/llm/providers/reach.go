package providers

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/probe"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
)

// Re-checks of a model server that does not answer. A local one (probed,
// llm.IsLocalURL) may start after the node (both at boot) and load a model
// for minutes: the node does not give up on it, and does not ask it more
// than once per ReprobeMax. An endpoint that is not so probed (a hosted
// API) gets no request just for status: only its host name is looked up
// (DNS, no connection), so that a misspelled or unresolvable name shows
// before a call fails; a probe = "on" of a hosted API still runs once, as
// before, and marks nothing (at boot the network may not be up yet).
const (
	logNext  = "next"
	logHost  = "host"
	logCause = "cause"
	// DefaultReprobe is the first wait before checking again; each further
	// miss doubles it up to ReprobeMax.
	DefaultReprobe = 5 * time.Second
	ReprobeMax     = time.Minute
)

// check is one look at a link's server (miss counts the looks before it
// that found it down): whether it is down now, and how.
type check func(ctx context.Context, miss int) (cause string, down bool)

// recheck runs c until the server answers, backing off between misses,
// and reports each miss and the answer on the chain's link (reaches: c
// asks the server itself, whose answer also ends a cool-down its absence
// caused). One recheck runs per model at a time; reprobe wakes it.
func (t *tuner) recheck(chain *resilient.Chain, c check, reaches bool) func(ctx context.Context) {
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
		for miss := 0; ; miss++ {
			cause, down := c(ctx, miss)
			if ctx.Err() != nil {
				return
			}
			switch {
			case !down && reaches:
				chain.Reached(t.link)
				return
			case !down:
				chain.Answering(t.link)
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

// lost checks the server again in the background after a call found
// nobody answering there (resilient.Link.OnUnreachable), as at start and
// until it answers: a local server by its probe, a hosted API by its host
// name's look-up alone (no request just for status). One that is already
// being checked is left to that check.
func (t *tuner) lost(chain *resilient.Chain) {
	if chain == nil || t.watching.Load() {
		return
	}
	switch host := hostName(t.e.BaseURL, t.client); {
	case t.watched():
		chain.Go(t.recheck(chain, t.afterLoss(t.probeCheck), true))
	case host != "":
		chain.Go(t.recheck(chain, t.afterLoss(t.nameCheck(host)), false))
	}
}

// afterLoss is c for a server that failed a call: its first miss is
// logged as the server going away, not as a wrong base URL.
func (t *tuner) afterLoss(c check) check {
	return func(ctx context.Context, miss int) (string, bool) {
		cause, down := c(ctx, miss+1)
		if down && miss == 0 {
			t.log.Warn("llm server stopped answering; checking it again in the background", logBaseURL, t.e.BaseURL, logCause, cause)
		}
		return cause, down
	}
}

// probeCheck probes the model and applies what the server says.
func (t *tuner) probeCheck(ctx context.Context, miss int) (string, bool) {
	err := t.probe(ctx)
	cause, down := notAnswering(err, t.e.ProbeTimeout.Duration)
	switch {
	case err != nil && miss == 0:
		// A warning: a server that does not answer here fails the calls
		// too (the node still starts, and asks again in the background).
		t.log.Warn("llm capability probe got no answer: is the model server running, and is [llm] base_url right? Keeping the configured settings",
			logBaseURL, t.e.BaseURL, logErr, err)
	case err != nil:
		t.log.Debug("llm server still not answering", logBaseURL, t.e.BaseURL, logErr, err)
	case miss > 0:
		t.log.Info("llm server answers", logBaseURL, t.e.BaseURL)
	}
	return cause, down
}

// nameCheck looks the endpoint's host name up, bounded by probe_timeout.
func (t *tuner) nameCheck(host string) check {
	return func(ctx context.Context, miss int) (string, bool) {
		lctx, cancel := context.WithTimeout(ctx, t.e.ProbeTimeout.Duration)
		defer cancel()
		_, err := t.lookup(lctx, host)
		if err == nil {
			if miss > 0 {
				t.log.Info("llm endpoint's host name resolves", logHost, host)
			}
			return "", false
		}
		cause := "host " + host + " not resolved: " + llm.Excerpt(err.Error(), 120)
		var dns *net.DNSError
		if errors.As(err, &dns) && dns.IsNotFound {
			cause = "host " + host + " not found"
		} else if lctx.Err() != nil {
			cause = "host " + host + " not resolved within probe_timeout " + t.e.ProbeTimeout.Duration.String()
		}
		if miss == 0 {
			t.log.Warn("llm endpoint's host name does not resolve: is [llm] base_url right, and is the network up?", logBaseURL, t.e.BaseURL, logErr, err)
		}
		return cause, true
	}
}

// hostName is the base URL's host when it is a name to look up: not an
// IP address, and not reached through a proxy (which resolves it, where
// this machine may not be able to); "" otherwise.
func hostName(baseURL string, client *http.Client) string {
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" || net.ParseIP(u.Hostname()) != nil {
		return ""
	}
	proxy := http.ProxyFromEnvironment
	if client != nil && client.Transport != nil {
		tr, ok := client.Transport.(*http.Transport)
		if !ok {
			return "" // a transport of its own may dial anything
		}
		proxy = tr.Proxy
	}
	if proxy != nil {
		if p, err := proxy(&http.Request{URL: u}); err != nil || p != nil {
			return ""
		}
	}
	return u.Hostname()
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

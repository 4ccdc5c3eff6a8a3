package resilient

import (
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Reachability. Whoever built the chain may check a link's server in the
// background (providers: the capability probe of a local model server, the
// look-up of a hosted one's host name) and
// report what it found with NotAnswering and Answering, so that status
// pages say a server is down before a first call fails. A link marked not
// answering is still tried by calls, as before; any answer on it (a call,
// a warm-up) clears the mark.

// NotAnswering records that the server of link i (in chain order) did not
// answer a check made now: cause says how ("connection refused"). The
// first such report since the link last answered starts the outage.
func (c *Chain) NotAnswering(i int, cause string) {
	if i < 0 || i >= len(c.links) {
		return
	}
	now := c.o.Now()
	l := c.links[i]
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.downSince.IsZero() {
		l.downSince = now
	}
	l.downCause, l.downChecked = cause, now
}

// Answering records that the server of link i answered a check.
func (c *Chain) Answering(i int) {
	if i >= 0 && i < len(c.links) {
		c.links[i].answered()
	}
}

// Reached is Answering for a check that got an answer from the server
// itself (an HTTP answer of any kind, not a name look-up): a link cooling
// down because nobody answered there (its last failure a network one) is
// tried again at once, the cause being gone.
func (c *Chain) Reached(i int) {
	if i < 0 || i >= len(c.links) {
		return
	}
	l := c.links[i]
	l.answered()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastKind == llm.KindNetwork && c.o.Now().Before(l.coolUntil) {
		l.coolUntil = time.Time{}
		c.o.Logger.Info("llm server answers again; its link is tried again before its cool-down ends", logProvider, l.Provider.Name(), logModel, l.Model)
	}
}

// answered clears the link's outage.
func (l *link) answered() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.downSince, l.downChecked, l.downCause = time.Time{}, time.Time{}, ""
}

package mcptools

import (
	"fmt"
	"math/bits"
	"time"
)

// A server without a session is started again in the background: one
// that offers no tools cannot be reached by a call, which restarts a
// server otherwise (server.live), and one that offers tools must not
// offer them dead until a call comes. Its first start failed, a restart's
// listing failed or was refused (and its tools were withdrawn), or its
// session ended (sessionEnded: its tools are withdrawn when the restart
// must wait for the backoff).
// One goroutine per such server restarts it in the background, with the
// backoff of the restarts (RestartBackoffMin doubling to
// RestartBackoffMax), until it has a session again; the tools it then
// lists are offered through Options.Changed. Set.Close stops it and waits
// for it.
//
// The log says when the server goes down, and then only at the 2nd, 4th,
// 8th... failed start, with the count; a session that ends soon after
// its start counts as a failed start. That it offers tools again is
// logged at the first start that lists them, and then only when the
// count is a power of two, until a session runs for backoffMax (settle),
// which ends the count: a server that fails every start writes 11 lines
// in its first day and 14 in a week, and one that crashes soon after
// every start twice as many, not one a minute.

// failedStart notes that the server's first start failed with err, and
// returns err saying that it is retried.
func (srv *server) failedStart(err error) error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.backoff = srv.backoffMin
	srv.retryAt = srv.now().Add(srv.backoff)
	srv.lost(err)
	return fmt.Errorf("%w; tried again in the background", err)
}

// lost notes that a start of the server failed with err, or that its
// session ended, and starts its background retry. srv.mu is held.
func (srv *server) lost(err error) {
	if srv.closed || srv.stopped.Err() != nil {
		return
	}
	srv.settle()
	if !srv.down {
		srv.down, srv.tries = true, 1
		srv.log.Warn("MCP server is down; it is started again in the background",
			"err", err, "next_in", max(srv.retryAt.Sub(srv.now()), 0).Round(time.Millisecond))
	} else if srv.tries++; bits.OnesCount(uint(srv.tries)) == 1 {
		srv.log.Warn("MCP server is still down", "failed_starts", srv.tries, "err", err,
			"next_in", max(srv.retryAt.Sub(srv.now()), 0).Round(time.Millisecond))
	}
	if !srv.retrying {
		srv.retrying = true
		srv.retries.Add(1)
		go srv.retry()
	}
}

// back notes a start of the server that listed its tools. srv.mu is held.
func (srv *server) back() {
	if !srv.down || !srv.offering() || srv.backSaid == srv.tries || bits.OnesCount(uint(srv.tries)) != 1 {
		return
	}
	srv.log.Info("MCP server offers its tools again", "failed_starts", srv.tries)
	srv.backSaid = srv.tries
}

// retry restarts the server at the time its backoff allows, again and
// again, until it has a session or the Set is closed.
func (srv *server) retry() {
	defer srv.retries.Done()
	for {
		srv.mu.Lock()
		wait := srv.retryAt.Sub(srv.now())
		srv.mu.Unlock()
		select {
		case <-srv.stopped.Done():
			srv.mu.Lock()
			srv.retrying = false
			srv.mu.Unlock()
			return
		case <-srv.after(max(wait, 0)):
		}
		srv.mu.Lock()
		if !srv.closed && !srv.up() {
			_, _ = srv.restart(srv.stopped) // its failure is counted and logged by lost
		}
		done := srv.closed || srv.up()
		if done {
			srv.retrying = false
		}
		srv.mu.Unlock()
		if done {
			return
		}
	}
}

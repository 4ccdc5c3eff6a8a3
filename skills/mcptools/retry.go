package mcptools

import (
	"fmt"
	"math/bits"
	"time"
)

// A server that offers no tools and has no session cannot be reached by
// a call, which is what restarts a server otherwise (server.live): its
// first start failed, a restart's listing failed or was refused (and its
// tools were withdrawn), or the session of a server listing none ended.
// One goroutine per such server restarts it in the background, with the
// backoff of the restarts (RestartBackoffMin doubling to
// RestartBackoffMax), until it has a session again; the tools it then
// lists are offered through Options.Changed. Set.Close stops it and waits
// for it.
//
// The log says when the server goes down and when it offers tools again,
// once each, and in between only at the 2nd, 4th, 8th... failed start,
// with the count: a server that fails every start writes 11 lines in
// its first day and 14 in a week, not one a minute.

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
// session ended, while it offers no tools, and starts its background
// retry. srv.mu is held.
func (srv *server) lost(err error) {
	if srv.closed || srv.stopped.Err() != nil {
		return
	}
	if !srv.down {
		srv.down, srv.tries = true, 1
		srv.log.Warn("MCP server offers no tools; it is started again in the background",
			"err", err, "next_in", srv.retryAt.Sub(srv.now()).Round(time.Millisecond))
	} else if srv.tries++; bits.OnesCount(uint(srv.tries)) == 1 {
		srv.log.Warn("MCP server still offers no tools", "failed_starts", srv.tries, "err", err,
			"next_in", srv.retryAt.Sub(srv.now()).Round(time.Millisecond))
	}
	if !srv.retrying {
		srv.retrying = true
		srv.retries.Add(1)
		go srv.retry()
	}
}

// back notes a start of the server that listed its tools. srv.mu is held.
func (srv *server) back() {
	if !srv.down || !srv.offering() {
		return
	}
	srv.log.Info("MCP server offers its tools again", "failed_starts", srv.tries)
	srv.down, srv.tries = false, 0
}

// retry restarts the server at the time its backoff allows, again and
// again, until it has a session or the Set is closed.
func (srv *server) retry() {
	defer srv.retries.Done()
	for {
		srv.mu.Lock()
		wait := srv.retryAt.Sub(srv.now())
		srv.mu.Unlock()
		t := time.NewTimer(max(wait, 0))
		select {
		case <-srv.stopped.Done():
			t.Stop()
			srv.mu.Lock()
			srv.retrying = false
			srv.mu.Unlock()
			return
		case <-t.C:
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

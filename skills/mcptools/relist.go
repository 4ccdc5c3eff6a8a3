package mcptools

import (
	"context"
	"fmt"
	"math/bits"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server that says its tools changed (notifications/tools/list_changed)
// has them listed again on its live session, within the bounds of every
// listing (list), and what it offers follows as after a restart: through
// setTools and Options.Changed. A listing that fails or is refused ends
// the session and withdraws the server's tools, as a restart's does; the
// server is then started again in the background (retry.go).
//
// The notifications are outside input: a server may send them without
// end. They are coalesced: one goroutine per server lists while
// notifications come, at most one listing in flight and one pending after
// it, whatever their number, and no sooner than RelistInterval after the
// last; the goroutine ends when none is pending. The handler the SDK calls
// only notes the notification, so that the SDK's reading of the session
// never waits for a listing.
//
// The log says when a listing changed what the server offers, here or at
// a restart: each time
// when changes are a minute apart or more, else at the 1st, 2nd, 4th,
// 8th... change since the last quiet minute, with the count, so a server
// that changes its tools every second writes 17 lines a day.

// RelistInterval is the least time between two listings of a server that
// its notifications/tools/list_changed cause; those that come in between
// are coalesced into one listing.
const RelistInterval = time.Second

// listChanged is the session's ToolListChangedHandler: it notes that the
// server's tools changed and starts the listing goroutine when none runs.
func (srv *server) listChanged(context.Context, *mcp.ToolListChangedRequest) {
	srv.relistMu.Lock()
	defer srv.relistMu.Unlock()
	srv.notices++
	if srv.relistClosed {
		return
	}
	if srv.relisting {
		srv.relistPending = true
		return
	}
	srv.relisting = true
	srv.relists.Add(1)
	go srv.relistLoop()
}

// relistLoop lists the server's tools again, each time no sooner than
// relistEvery after the last, until no notification is pending or the Set
// is closed.
func (srv *server) relistLoop() {
	defer srv.relists.Done()
	for {
		srv.relistMu.Lock()
		wait := time.Until(srv.lastRelist.Add(srv.relistEvery))
		srv.relistMu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-srv.stopped.Done():
				t.Stop()
			case <-t.C:
			}
		}
		srv.relistMu.Lock()
		if srv.relistClosed || srv.stopped.Err() != nil {
			srv.relisting = false
			srv.relistMu.Unlock()
			return
		}
		srv.relistPending, srv.lastRelist = false, time.Now()
		srv.relistMu.Unlock()

		srv.relist()

		srv.relistMu.Lock()
		done := !srv.relistPending || srv.relistClosed
		if done {
			srv.relisting = false
		}
		srv.relistMu.Unlock()
		if done {
			return
		}
	}
}

// relist lists the tools of the server's live session again. A session
// that ended or was replaced meanwhile is left to its restart, which lists
// its tools anyway.
func (srv *server) relist() {
	srv.mu.Lock()
	session, ok := srv.session, !srv.closed && srv.up()
	srv.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(srv.stopped, DefaultConnectTimeout)
	tools, skipped, err := srv.list(ctx, session)
	cancel()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.relistMu.Lock()
	srv.relistings++
	srv.relistMu.Unlock()
	if srv.closed || srv.session != session || !srv.up() {
		return
	}
	if err != nil {
		err = fmt.Errorf("%w: list tools again after the server said they changed: %w", ErrServerDown, err)
		if srv.offering() {
			err = fmt.Errorf("%w; its tools are no longer offered", err)
		}
		srv.setTools(nil, nil)
		srv.lost(err)
		// Its session ends here, not in the background, so that the
		// end is not counted as another failure (use).
		srv.session = nil
		_ = session.Close()
		return
	}
	if changed, notOffered := srv.setTools(tools, skipped); changed {
		srv.noteChange("notification", len(tools), notOffered)
	}
}

// noteChange logs that a listing after a restart or a notification
// (after) changed the server's tools, with the bound described above;
// the line counts the tools of that listing not offered and gives the
// first reason (a WARN then). srv.mu is held.
func (srv *server) noteChange(after string, tools int, notOffered []error) {
	now := srv.now()
	if now.Sub(srv.lastChange) >= RestartBackoffMax {
		srv.changes = 0
	}
	srv.lastChange = now
	if srv.changes++; bits.OnesCount(uint(srv.changes)) != 1 {
		return
	}
	if len(notOffered) == 0 {
		srv.log.Info("MCP server's tools changed", "after", after, "tools", tools, "changes", srv.changes)
		return
	}
	srv.log.Warn("MCP server's tools changed, some not offered", "after", after, "tools", tools, "changes", srv.changes,
		"not_offered", len(notOffered), "first", notOffered[0])
}

// closeRelists stops the listing goroutine and waits for it.
func (srv *server) closeRelists() {
	srv.relistMu.Lock()
	srv.relistClosed = true
	srv.relistMu.Unlock()
	srv.relists.Wait()
}

package edge

import (
	"context"
	"time"
)

// How long the request log remembers a finished request. A redelivered
// command (a broker's, or the orchestrator's repeat of a call after a
// reconnect or a move to another node) comes within the call's deadline,
// at most the largest category timeout (10 minutes) plus its slack;
// requestLogKeep is several times that. Deleting older rows bounds the
// log, whose rows keep each report whole (up to [tools] max_result_bytes):
// without it an agent's database grew with every call it ever ran.
const (
	requestLogKeep = time.Hour
	// requestLogPruneEvery is how often finished requests older than
	// requestLogKeep are deleted; also once at start.
	requestLogPruneEvery = 10 * time.Minute
)

// pruneRequests deletes the finished requests of the request log older
// than requestLogKeep, at once and then every requestLogPruneEvery, until
// ctx ends. Running requests are kept (auditInterrupted ends those of an
// earlier run at start).
func (a *Agent) pruneRequests(ctx context.Context) {
	every := a.requestLogPruneEvery
	if every <= 0 {
		every = requestLogPruneEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := a.store.PruneRequests(ctx, time.Now().Add(-requestLogKeep))
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Warn("delete old requests from the request log", "err", err)
		case n > 0:
			a.log.Debug("deleted old requests from the request log", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

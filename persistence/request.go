package persistence

import (
	"context"
	"fmt"
)

// RequestState is where a request_id stands in a RequestLog. The zero value
// is not a state; it is what BeginRequest returns along with an error.
type RequestState int

// The states BeginRequest reports.
const (
	// RequestNew: the id was never seen; it is now marked started.
	RequestNew RequestState = iota + 1
	// RequestRunning: the id was started and never finished, e.g. the agent
	// crashed while running it.
	RequestRunning
	// RequestDone: the id finished; the stored reply comes with it.
	RequestDone
)

// String returns "new", "running" or "done".
func (s RequestState) String() string {
	switch s {
	case RequestNew:
		return "new"
	case RequestRunning:
		return "running"
	case RequestDone:
		return "done"
	}
	return fmt.Sprintf("RequestState(%d)", int(s))
}

// RequestLog is the durable exactly-once record an edge agent keeps per
// request_id.
type RequestLog interface {
	// BeginRequest marks requestID as started. If the id was seen before it
	// returns its state: RequestNew (first time, now marked started),
	// RequestRunning (started, never finished: e.g. the agent crashed
	// mid-run), RequestDone (finished; report holds the stored reply bytes).
	BeginRequest(ctx context.Context, requestID string) (state RequestState, report []byte, err error)
	// FinishRequest marks requestID as done and stores report, the reply
	// bytes to send again if the request is repeated.
	FinishRequest(ctx context.Context, requestID string, report []byte) error
}

package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
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
	// RequestDropped: the id finished, and its stored reply was dropped
	// to keep the request log within its byte bound; what is left of it
	// is a ReportStub. The request must not run again.
	RequestDropped
)

// String returns "new", "running", "done" or "dropped".
func (s RequestState) String() string {
	switch s {
	case RequestNew:
		return "new"
	case RequestRunning:
		return "running"
	case RequestDone:
		return "done"
	case RequestDropped:
		return "dropped"
	}
	return fmt.Sprintf("RequestState(%d)", int(s))
}

// RequestLog is the durable exactly-once record an edge agent keeps per
// request_id.
type RequestLog interface {
	// BeginRequest marks requestID as started. If the id was seen before it
	// returns its state: RequestNew (first time, now marked started),
	// RequestRunning (started, never finished: e.g. the agent crashed
	// mid-run), RequestDone (finished; report holds the stored reply bytes),
	// RequestDropped (finished, its reply dropped for the log's byte
	// bound; no report, and the request must not run again).
	BeginRequest(ctx context.Context, requestID string) (state RequestState, report []byte, err error)
	// FinishRequest marks requestID as done and stores report, the reply
	// bytes to send again if the request is repeated.
	FinishRequest(ctx context.Context, requestID string, report []byte) error
}

// ReportStub is what a request log keeps of a finished request once its
// report is dropped for the log's byte bound: enough to answer a
// redelivery truthfully without running the request again.
type ReportStub struct {
	// Tool is the tool the request ran (the request's Run.Tool); empty
	// when not known.
	Tool string
	// Status is the run's outcome, "success" or "error", and ErrorType its
	// error type; empty when not known (a row of an older version's).
	Status, ErrorType string
	// ResultBytes is the full size of the run's output, as its audit row
	// has it (ToolCall.ResultBytes); 0 when not known.
	ResultBytes int64
	// ReportBytes and ReportSHA256 (lowercase hex) are the size and hash
	// of the report that was first sent and then dropped.
	ReportBytes  int64
	ReportSHA256 string
}

// Run is what an edge agent records of a tool request when it begins it:
// enough to audit the request should the agent die before it ends.
type Run struct {
	// Tool is the tool called; empty when not known.
	Tool string
	// Params are its arguments as JSON; empty means none.
	Params json.RawMessage
	// ConversationID is the conversation of the call; may be empty.
	ConversationID string
}

// RunProcess identifies the process group a request's tool runs in, so
// that an agent started after a crash can tell whether what it finds under
// that id is still the same group.
type RunProcess struct {
	// Pgid is the id of the group: the pid of the tool's first process.
	Pgid int
	// StartTicks is when that first process started, in clock ticks since
	// boot (field 22 of /proc/{pid}/stat).
	StartTicks uint64
	// BootID is the kernel's boot id at the time; a group of another boot
	// is long gone.
	BootID string
}

// InterruptedRun is a request an agent began and never finished.
type InterruptedRun struct {
	RequestID string
	Run
	// Started is when the request was begun.
	Started time.Time
	// Process is the group its tool ran in; nil when none was recorded (no
	// process started, or an agent older than this record wrote the row).
	Process *RunProcess
}

// ErrNotRunning is a store's answer to ending, as interrupted, a request
// that is no longer running: another start audited it already.
var ErrNotRunning = errors.New("request is not running")

package wire

// ErrorType is the stable, machine-readable class of a failed command or tool
// call. It travels on the wire (report payloads), is stored in the audit trail
// and is shown to the LLM, so its values never change meaning.
type ErrorType string

// The error types of the tool-call contract. The first five come from the
// spec; the rest name failures that happen around the tool rather than in it.
const (
	ErrTimeout          ErrorType = "timeout"           // the tool or the round trip ran past its deadline
	ErrNotFound         ErrorType = "not_found"         // unknown tool, missing binary or missing hardware
	ErrPermissionDenied ErrorType = "permission_denied" // blocked by a permission, a jail or a guard
	ErrInvalidParams    ErrorType = "invalid_params"    // arguments do not match the tool's schema
	ErrExecutionFailed  ErrorType = "execution_failed"  // the tool ran and failed (non-zero exit, crash)
	ErrAgentOffline     ErrorType = "agent_offline"     // the target edge agent is not connected
	ErrInvalidCommand   ErrorType = "invalid_command"   // malformed or unknown command on the wire
	ErrInterrupted      ErrorType = "interrupted"       // the agent restarted while the request was running
	ErrInternal         ErrorType = "internal"          // a fault of evoclaw itself, never of the tool
	ErrExpired          ErrorType = "expired"           // the command arrived or waited past its expires_at; it did not run
	ErrBusy             ErrorType = "busy"              // the agent's command queue is full; it did not run (retry later)
	ErrNotStarted       ErrorType = "not_started"       // a gated command was never told to run (startgate.go); it did not run
)

// Known reports whether t is one of the defined error types.
func (t ErrorType) Known() bool {
	switch t {
	case ErrTimeout, ErrNotFound, ErrPermissionDenied, ErrInvalidParams, ErrExecutionFailed,
		ErrAgentOffline, ErrInvalidCommand, ErrInterrupted, ErrInternal, ErrExpired, ErrBusy, ErrNotStarted:
		return true
	}
	return false
}

package wire

import "fmt"

// The start gate, an evoclaw extension that lets the orchestrator move a
// call to another agent when it is known not to have started (docs/WIRE.md,
// "Start gate"):
//
//  1. the orchestrator sends a tool command with "start_gate": true, only
//     to an agent whose online status lists FeatureStartGate;
//  2. the agent records the request_id in its request log (durable), then
//     sends a ReportAccepted report and waits;
//  3. the orchestrator answers with CmdStart: run true if it still holds
//     the call for this agent (from then on the call is never moved), run
//     false if it gave the call to another agent or forgot it;
//  4. the agent runs the tool only on run true; on run false, or when no
//     start arrives in time, it answers ErrNotStarted and never runs it.
//
// The orchestrator moves a call only while it has not sent run true, and
// its edge actor decides both in one mailbox, so a call runs on at most one
// agent whatever the broker delivers or drops.
const (
	// FeatureStartGate in Status.Features says the agent honours
	// ToolPayload.StartGate.
	FeatureStartGate = "start_gate"
	// ReportAccepted is the report_type an agent sends for a gated command
	// once its request_id is durable and before the tool runs; its payload
	// is Accepted.
	ReportAccepted = "accepted"
	// CmdStart answers an accepted report; its payload is StartPayload and
	// its request_id the gated command's.
	CmdStart = "start"
	// MaxFeatures and MaxFeatureLen bound Status.Features.
	MaxFeatures   = 16
	MaxFeatureLen = 32
)

// Accepted is the payload of a ReportAccepted report.
type Accepted struct {
	RequestID string `json:"request_id"`
}

// StartPayload is the payload of a CmdStart command.
type StartPayload struct {
	// Run says the agent may run the command; false: it must not.
	Run bool `json:"run"`
}

// DecodeAccepted parses an accepted report.
func DecodeAccepted(r Report) (Accepted, error) {
	var a Accepted
	if err := decodePayload("accepted", r, ReportAccepted, &a); err != nil {
		return Accepted{}, err
	}
	if a.RequestID == "" || len(a.RequestID) > MaxRequestIDLen {
		return Accepted{}, &DecodeError{What: "accepted", Field: "request_id", Msg: fmt.Sprintf("required, at most %d bytes", MaxRequestIDLen)}
	}
	return a, nil
}

// DecodeStartPayload parses the payload of a CmdStart command.
func DecodeStartPayload(b []byte) (StartPayload, error) {
	var p StartPayload
	if err := decodeObject("start payload", b, &p); err != nil {
		return StartPayload{}, err
	}
	return p, nil
}

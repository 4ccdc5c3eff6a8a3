package wire

import "fmt"

// ReportProgress is the report_type of streamed tool output: an evoclaw
// extension, sent only by an evoclaw agent and only for a tool command whose
// payload set stream_output (see ToolPayload.StreamOutput and docs/WIRE.md).
const ReportProgress = "progress"

// Streams a Progress chunk may name.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// MaxProgressOutput bounds Progress.Output in bytes. An agent never sends
// more in one report; a decoder refuses more.
const MaxProgressOutput = 4 << 10

// Progress is the payload of a progress report: one chunk of the output of
// a tool that is still running. Chunks of one request are numbered from 1
// in the order the agent sent them; a chunk may be dropped on the way
// (gaps in Seq), and none is ever the result: the result report that
// follows carries the tool's output as usual.
type Progress struct {
	RequestID string `json:"request_id"`
	// Seq numbers the request's chunks from 1.
	Seq int64 `json:"seq"`
	// Stream is StreamStdout or StreamStderr when every byte of Output
	// came from that stream; empty when the chunk mixes both or the agent
	// cannot tell.
	Stream string `json:"stream,omitempty"`
	// Output is the text of the chunk, valid UTF-8, at most
	// MaxProgressOutput bytes.
	Output string `json:"output"`
	// Omitted counts the bytes of output the agent has not streamed so far
	// for this request (over its budget or rate); zero means none.
	Omitted int64 `json:"omitted,omitempty"`
}

// DecodeProgress parses the payload of a progress report.
func DecodeProgress(r Report) (Progress, error) {
	var p Progress
	if err := decodePayload("progress", r, ReportProgress, &p); err != nil {
		return Progress{}, err
	}
	if err := checkRequestID("progress", p.RequestID, true); err != nil {
		return Progress{}, err
	}
	switch {
	case p.Seq < 1:
		return Progress{}, &DecodeError{What: "progress", Field: "seq", Msg: "must be at least 1"}
	case p.Omitted < 0:
		return Progress{}, &DecodeError{What: "progress", Field: "omitted", Msg: "must not be negative"}
	case len(p.Output) > MaxProgressOutput:
		return Progress{}, &DecodeError{What: "progress", Field: "output", Msg: fmt.Sprintf("%d bytes, at most %d allowed", len(p.Output), MaxProgressOutput)}
	}
	switch p.Stream {
	case "", StreamStdout, StreamStderr:
	default:
		return Progress{}, &DecodeError{What: "progress", Field: "stream", Msg: fmt.Sprintf("unknown value %.32q", p.Stream)}
	}
	return p, nil
}

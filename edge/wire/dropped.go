package wire

import (
	"cmp"
	"fmt"
	"strings"
)

// Dropped is what an agent's answer to a redelivered command says when
// it no longer holds the report it first sent (an evoclaw extension): its
// request log keeps reports within a byte bound, and past it the oldest
// are dropped, leaving their size and hash. The command is never run
// again; the answer keeps the first run's status and error type. Peers
// that do not know these fields read the answer's result or error, which
// says the same in words (DroppedNote).
type Dropped struct {
	// Duplicate: this answers a command that ran before.
	Duplicate bool `json:"duplicate,omitempty"`
	// ResultDropped: the agent no longer holds that run's report.
	ResultDropped bool `json:"result_dropped,omitempty"`
	// ReportBytes and ReportSHA256 (64 lowercase hex digits) are the size
	// and SHA-256 of the report the agent first sent.
	ReportBytes  int64  `json:"report_bytes,omitempty"`
	ReportSHA256 string `json:"report_sha256,omitempty"`
}

// check reports whether d keeps its rules: sizes not negative, a hash of
// 64 lowercase hex digits when given.
func (d Dropped) check(what string) error {
	if err := nonNegative(what, "report_bytes", d.ReportBytes); err != nil {
		return err
	}
	if h := d.ReportSHA256; h != "" && (len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "") {
		return &DecodeError{What: what, Field: "report_sha256", Msg: "not 64 lowercase hex digits"}
	}
	return nil
}

// DroppedNote says in words what an answer with d means: the command ran
// once with status (and errType when it failed), its output was
// resultBytes bytes (0: not known), and the agent no longer holds it.
func DroppedNote(d Dropped, status string, errType ErrorType, resultBytes int64) string {
	outcome := "succeeded"
	if status != StatusSuccess {
		outcome = fmt.Sprintf("failed (%s)", cmp.Or(string(errType), "error type not known"))
	}
	output := "its output"
	if resultBytes > 0 {
		output = fmt.Sprintf("its output (%d bytes)", resultBytes)
	}
	report := "its report"
	if d.ReportSHA256 != "" {
		report = fmt.Sprintf("its report (%d bytes, sha256 %s)", d.ReportBytes, d.ReportSHA256)
	}
	return fmt.Sprintf("This request already ran once on the agent and %s; %s is no longer held by the agent, which dropped %s to keep its request log within its byte bound. It was not run again, and its output cannot be sent again.",
		outcome, output, report)
}

package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// decodeReportTwoSteps is DecodeReport as it was before it decoded an
// envelope in one pass: a probe for report_type and status, then the
// envelope. DecodeReport must answer every input as it does.
func decodeReportTwoSteps(topicAgent string, b []byte) (Report, error) {
	var probe struct {
		ReportType *string `json:"report_type"`
		Status     *string `json:"status"`
	}
	if err := decodeObjectStream("report", b, &probe); err != nil {
		return Report{}, err
	}
	if probe.ReportType == nil {
		if probe.Status == nil {
			return Report{}, &DecodeError{What: "report", Field: "report_type", Msg: "required (or a flat result with \"status\")"}
		}
		rt := ReportResult
		if *probe.Status == StatusError {
			rt = ReportError
		}
		return Report{AgentID: topicAgent, ReportType: rt, Payload: json.RawMessage(bytes.TrimSpace(b))}, nil
	}
	var r Report
	if err := decodeObjectStream("report", b, &r); err != nil {
		return Report{}, err
	}
	switch r.ReportType {
	case ReportResult, ReportError, ReportHeartbeat, ReportMetric, ReportProgress, ReportAccepted, ReportDelegate:
	default:
		return Report{}, &DecodeError{What: "report", Field: "report_type", Msg: "unknown value " + string(mustJSON(r.ReportType))}
	}
	if r.AgentID == "" {
		r.AgentID = topicAgent
	} else if r.AgentID != topicAgent {
		return Report{}, &DecodeError{What: "report", Field: "agent_id", Msg: "does not match"}
	}
	p, err := objectOrEmpty("report", "payload", r.Payload)
	if err != nil {
		return Report{}, err
	}
	r.Payload = p
	return r, nil
}

// decodeObjectStream is decodeObject as it was: every input through a
// stream decoder.
func decodeObjectStream(what string, b []byte, v any) error {
	t, err := objectBytes(what, b)
	if err != nil {
		return err
	}
	return decodeStream(what, t, v)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// sameDecoding fails t when decodeObject and the stream decoder disagree
// on b (accepted or not, the error's text, the value), or when DecodeReport
// and its two-step form disagree (accepted or not, the report).
func sameDecoding(t *testing.T, b []byte) {
	t.Helper()
	var fast, slow map[string]any
	errFast, errSlow := decodeObject("x", b, &fast), decodeObjectStream("x", b, &slow)
	if (errFast == nil) != (errSlow == nil) || (errFast != nil && errFast.Error() != errSlow.Error()) || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decodeObject(%q) = %v, %v; the stream decoder: %v, %v", b, fast, errFast, slow, errSlow)
	}
	var fastTR, slowTR ToolPayload
	errFast, errSlow = decodeObject("x", b, &fastTR), decodeObjectStream("x", b, &slowTR)
	if (errFast == nil) != (errSlow == nil) || (errFast != nil && errFast.Error() != errSlow.Error()) ||
		(errFast == nil && !reflect.DeepEqual(fastTR, slowTR)) {
		t.Fatalf("decodeObject(%q) into a struct = %+v, %v; the stream decoder: %+v, %v", b, fastTR, errFast, slowTR, errSlow)
	}
	r1, err1 := DecodeReport("a", b)
	r2, err2 := decodeReportTwoSteps("a", b)
	if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(r1, r2) {
		t.Fatalf("DecodeReport(%q) = %+v, %v; in two steps: %+v, %v", b, r1, err1, r2, err2)
	}
}

// The one-pass decoders answer every kind of input as the stream decoder
// and the two-step report decoder did: the shipped examples, broken ones,
// and the corners where the two could part (trailing data, a closing
// bracket after the object, a flat result whose fields do not fit an
// envelope, a null report_type).
func TestOnePassDecodingMatchesTheStreamDecoder(t *testing.T) {
	inputs := []string{
		`{"a":1}`, ` {"a":1} `, `{"a":1} {"b":2}`, `{"a":1} x`, `{"a":1}}`, `{"a":1}]`, `{"a":1`, `{"a":`, `{`, `{}`, `[]`, ``,
		`{"tool":5}`, `{"tool":"t","timeout_ms":"x"}`, `{"tool":"t","parameters":{"k":[1,2]}}`,
		`{"report_type":"result","payload":{"request_id":"r","status":"success"}}`,
		`{"report_type":"result","payload":{"request_id":"r"}} trailing`,
		`{"report_type":"result","agent_id":"b","payload":{}}`,
		`{"report_type":"nope","payload":{}}`,
		`{"report_type":null,"status":"success","result":"x"}`,
		`{"status":"error","error":"boom","timestamp":"not a number"}`,
		`{"status":"success","payload":[1],"agent_id":7}`,
		`{"status":5}`, `{"report_type":5}`, `{"report_type":"result","status":5,"payload":{}}`,
		`{"report_type":"result","timestamp":"x","payload":{}}`,
		`{"report_type":"result","payload":[]}`,
	}
	for _, dir := range []string{"", "bad"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "wire", dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no examples in testdata/wire/%s: %v", dir, err)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, string(b))
		}
	}
	for _, in := range inputs {
		sameDecoding(t, []byte(in))
	}
}

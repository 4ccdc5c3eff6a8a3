package wire

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// decodeObjectStream is decodeObject as it was: every input through a
// stream decoder.
func decodeObjectStream(what string, b []byte, v any) error {
	t, err := objectBytes(what, b)
	if err != nil {
		return err
	}
	return decodeStream(what, t, v)
}

// sameDecoding fails t when decodeObject and the stream decoder disagree
// on b (accepted or not, the error's text, the value), or when DecodeReport
// and its two-step form (the probe, then the envelope) disagree.
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
	r2, err2 := decodeReportSteps("a", b)
	if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) || !reflect.DeepEqual(r1, r2) {
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

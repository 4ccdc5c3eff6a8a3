package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestSalvageRequestID holds the scan to its rule (salvage.go): only the
// top-level request_id, read as encoding/json reads keys, given once, in a
// message that is otherwise valid JSON at any depth.
func TestSalvageRequestID(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"shallow", `{"request_id":"r1"}`, "r1"},
		{"deep value after", `{"request_id":"r2","payload":` + nest(20000) + `}`, "r2"},
		{"deep value before", `{"payload":{"x":` + nest(20000) + `},"request_id":"r3"}`, "r3"},
		{"deep objects", `{"request_id":"r4","p":` + strings.Repeat(`{"request_id":`, 20000) + `"in"` + strings.Repeat("}", 20000) + `}`, "r4"},
		{"escaped key", `{"request\u005Fid":"r5","p":` + nest(20000) + `}`, "r5"},
		{"key case", `{"Request_ID":"r6"}`, "r6"},
		{"escaped value", `{"request_id":"r\u0037"}`, "r7"},
		{"space around", " \n{ \"request_id\" :\t\"r8\" }\r\n", "r8"},
		{"nested only", `{"payload":{"request_id":"in"},"x":` + nest(20000) + `}`, ""},
		{"in an array", `{"p":[{"request_id":"in"}],"x":` + nest(20000) + `}`, ""},
		{"in a string", `{"p":"{\"request_id\":\"in\"}","x":` + nest(20000) + `}`, ""},
		{"escaped quote before", `{"p":"\\\",\"request_id\":\"in","x":1}`, ""},
		{"twice", `{"request_id":"a","request_id":"b"}`, ""},
		{"twice by case", `{"request_id":"a","REQUEST_ID":"b"}`, ""},
		{"twice, once escaped", `{"request_id":"a","request\u005fid":"b"}`, ""},
		{"twice, second not a string", `{"request_id":"a","request_id":null}`, ""},
		{"not a string", `{"request_id":7}`, ""},
		{"empty", `{"request_id":""}`, ""},
		{"too long", `{"request_id":"` + strings.Repeat("x", MaxRequestIDLen+1) + `"}`, ""},
		{"longest", `{"request_id":"` + strings.Repeat("x", MaxRequestIDLen) + `"}`, strings.Repeat("x", MaxRequestIDLen)},
		{"truncated", `{"request_id":"r","p":` + nest(20000)[:25000], ""},
		{"trailing data", `{"request_id":"r"} {}`, ""},
		{"unbalanced", `{"request_id":"r","p":[[}]}`, ""},
		{"bad escape", `{"request_id":"r","p":"\q"}`, ""},
		{"control character", "{\"request_id\":\"r\",\"p\":\"\x01\"}", ""},
		{"bad number", `{"request_id":"r","p":01}`, ""},
		{"bad literal", `{"request_id":"r","p":nul}`, ""},
		{"missing colon", `{"request_id" "r"}`, ""},
		{"trailing comma", `{"request_id":"r",}`, ""},
		{"array", `[{"request_id":"r"}]`, ""},
		{"too large", `{"request_id":"r","p":"` + strings.Repeat("x", MaxMessageBytes) + `"}`, ""},
	}
	for _, tt := range tests {
		if got := SalvageRequestID([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: SalvageRequestID = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSalvagePayloadField: a field of the payload object is read there
// only, once, and not when payload itself is given twice.
func TestSalvagePayloadField(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"envelope", `{"report_type":"result","payload":{"request_id":"p1","result":` + nest(20000) + `}}`, "p1"},
		{"payload key case", `{"PAYLOAD":{"request_id":"p2"}}`, "p2"},
		{"top-level only", `{"request_id":"top","payload":{"x":1}}`, ""},
		{"another member", `{"other":{"request_id":"in"}}`, ""},
		{"deeper in payload", `{"payload":{"x":{"request_id":"in"}}}`, ""},
		{"payload an array", `{"payload":[{"request_id":"in"}]}`, ""},
		{"payload twice", `{"payload":{"request_id":"a"},"payload":{}}`, ""},
	}
	for _, tt := range tests {
		got, ok := SalvageFields([]byte(tt.in), "payload", "payload.request_id")
		id, one := got[1].One()
		if !ok || got[0].Count != 1 || !one {
			id = ""
		}
		if id != tt.want {
			t.Errorf("%s: payload.request_id = %q, want %q", tt.name, id, tt.want)
		}
	}
}

// FuzzSalvage: the scan never panics; it accepts exactly the JSON objects
// encoding/json accepts, bar depth; what it reads is what encoding/json
// reads; and a message wrapped deeper, however it is made, never changes
// the top-level request_id.
func FuzzSalvage(f *testing.F) {
	for _, s := range []string{`{"request_id":"r"}`, `{"request\u005fid":"r","payload":{"request_id":"p"}}`, `{"a":[1,-2.5e+3,true,false,null,"\u00e9"]}`,
		`{"request_id":"a","request_id":"b"}`, `{"payload":[{"request_id":"x"}]}`, `{"x":` + nest(10001) + `}`, `{"x":"\"request_id\":"}`, `{} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := SalvageFields(b, "request_id", "payload", "payload.request_id")
		var v any
		err := json.Unmarshal(b, &v)
		_, isObject := v.(map[string]any)
		switch {
		case err == nil && isObject && !ok:
			t.Fatalf("refused a JSON object encoding/json reads: %q", b)
		case err == nil && !isObject && ok:
			t.Fatalf("accepted a JSON value that is not an object: %q", b)
		case err != nil && ok && !strings.Contains(err.Error(), "exceeded max depth"):
			t.Fatalf("accepted what encoding/json refuses (%v): %q", err, b)
		}
		if !ok {
			for _, g := range got {
				if g.Count != 0 || g.IsString {
					t.Fatalf("counted %+v in a refused message", g)
				}
			}
			return
		}
		if err == nil {
			var top struct {
				RequestID *string         `json:"request_id"`
				Payload   json.RawMessage `json:"payload"`
			}
			terr := json.Unmarshal(b, &top)
			if id, one := got[0].One(); one && (terr != nil && top.RequestID == nil || top.RequestID != nil && *top.RequestID != id) {
				t.Fatalf("read request_id %q, encoding/json reads %v (%v): %q", id, top.RequestID, terr, b)
			}
			var in struct {
				RequestID *string `json:"request_id"`
			}
			if id, one := got[2].One(); one && got[1].Count == 1 && (json.Unmarshal(top.Payload, &in) != nil || in.RequestID == nil || *in.RequestID != id) {
				t.Fatalf("read payload.request_id %q, encoding/json reads %v: %q", id, in.RequestID, b)
			}
		}
		if r, ok := SalvageReport("a1", b, errors.New("too deep")); ok {
			res, err := DecodeToolResult(r)
			if err != nil || r.ReportType != ReportError || res.Status != StatusError || res.ErrorType != ErrExecutionFailed || res.RequestID == "" || len(res.RequestID) > MaxRequestIDLen {
				t.Fatalf("salvaged report %+v (%+v, %v) from %q", r, res, err, b)
			}
		}
		wrapped := `{"payload":{"x":[` + string(b) + `]},"p":` + string(b) + `,"request_id":"top","q":[` + nest(10001) + `]}`
		if id := SalvageRequestID([]byte(wrapped)); len(wrapped) <= MaxMessageBytes && id != "top" {
			t.Fatalf("wrapped %q, read request_id %q, want top", b, id)
		}
	})
}

// TestSalvageReport: which unreadable reports still end their call, and
// for which request id.
func TestSalvageReport(t *testing.T) {
	d := nest(20000)
	tests := []struct{ name, in, want string }{
		{"result", `{"report_type":"result","payload":{"request_id":"r1","result":` + d + `}}`, "r1"},
		{"error, own agent id", `{"agent_id":"a1","report_type":"error","payload":{"request_id":"r2","x":` + d + `}}`, "r2"},
		{"flat", `{"status":"success","request_id":"r3","result":` + d + `}`, "r3"},
		{"another agent", `{"agent_id":"a2","report_type":"result","payload":{"request_id":"r","x":` + d + `}}`, ""},
		{"agent id twice", `{"agent_id":"a1","agent_id":"a2","report_type":"result","payload":{"request_id":"r","x":` + d + `}}`, ""},
		{"heartbeat", `{"report_type":"heartbeat","payload":{"request_id":"r","x":` + d + `}}`, ""},
		{"progress", `{"report_type":"progress","payload":{"request_id":"r","x":` + d + `}}`, ""},
		{"report type twice", `{"report_type":"result","report_type":"progress","payload":{"request_id":"r","x":` + d + `}}`, ""},
		{"payload twice", `{"report_type":"result","payload":{"request_id":"r","x":` + d + `},"payload":{}}`, ""},
		{"envelope, top-level id only", `{"report_type":"result","request_id":"r","payload":{"x":` + d + `}}`, ""},
		{"flat, payload id only", `{"status":"error","payload":{"request_id":"r"},"x":` + d + `}`, ""},
		{"neither", `{"payload":{"request_id":"r"},"x":` + d + `}`, ""},
	}
	for _, tt := range tests {
		r, ok := SalvageReport("a1", []byte(tt.in), errors.New("too deep"))
		got := ""
		if ok {
			res, err := DecodeToolResult(r)
			if err != nil || res.ErrorType != ErrExecutionFailed || !strings.Contains(res.Error, "too deep") {
				t.Fatalf("%s: salvaged %+v (%v), want an execution_failed error naming the cause", tt.name, res, err)
			}
			got = res.RequestID
		}
		if got != tt.want {
			t.Errorf("%s: salvaged request id %q, want %q", tt.name, got, tt.want)
		}
	}
}

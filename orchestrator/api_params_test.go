package orchestrator

import (
	"strings"
	"testing"
)

// TestEndpointsNameTheField: the jobs, approvals, runs and logs endpoints
// answer a bad request 400 with param naming the field at fault and a
// message that says what is wanted, a limit with its bounds. Before, these
// answered with param null, and a limit too large was told only "want a
// number from 1".
func TestEndpointsNameTheField(t *testing.T) {
	nodes := &statusNodes{t: t, nodes: map[string][2]string{}}
	base, token := nodes.get("ok")
	job := func(kv ...any) map[string]any {
		return with(map[string]any{"id": "j1", "schedule": "@daily", "prompt": "check the disks"}, kv...)
	}
	for _, tt := range []struct {
		method, path string
		body         any
		param, msg   string
	}{
		{"POST", "/v1/approvals/a1/deny", `{}`, "by", "by: required"},
		{"POST", "/v1/approvals/a1/approve", `{"by":"x\ny"}`, "by", "by: at most 64 bytes on one line"},
		{"POST", "/v1/approvals/a1/approve", map[string]any{"by": "ann", "note": strings.Repeat("n", 1025)}, "note", "note: at most 1024 bytes"},
		{"POST", "/v1/approvals/a1/approve", `{"by":"ann","bogus":1}`, "bogus", `unknown field "bogus"`},
		{"GET", "/v1/approvals?state=maybe", nil, "state", "state: want pending"},
		{"GET", "/v1/approvals?limit=3000", nil, "limit", "limit: want a number from 1 to "},
		{"GET", "/v1/approvals?limit=0", nil, "limit", "limit: want a number from 1 to "},
		{"POST", "/v1/jobs", `{"bogus":1}`, "bogus", `unknown field "bogus"`},
		{"POST", "/v1/jobs", `{"id":5}`, "id", "id: got a JSON number, want a string"},
		{"POST", "/v1/jobs", job("schedule", "every day"), "schedule", `schedule "every day"`},
		{"POST", "/v1/jobs", job("prompt", " "), "prompt", "prompt: required"},
		{"POST", "/v1/jobs", job("id", "a b"), "id", `id "a b"`},
		{"POST", "/v1/jobs", job("timeout", "forever"), "timeout", `timeout "forever"`},
		{"POST", "/v1/jobs", job("missed", "later"), "missed", `missed "later"`},
		// Who changed a job goes into its audit event as approvals' by
		// does: a long name was dropped for "api" without a word, and one
		// with a newline or NUL was kept.
		{"POST", "/v1/jobs?by=ann%0Aroot", job(), "by", "by: at most 64 bytes on one line"},
		{"DELETE", "/v1/jobs/j1?by=" + strings.Repeat("b", 65), nil, "by", "by: at most 64 bytes on one line"},
		{"POST", "/v1/jobs/j1/pause?by=a%00b", nil, "by", "by: at most 64 bytes on one line"},
		{"POST", "/v1/jobs/j1/resume?by=a%0Db", nil, "by", "by: at most 64 bytes on one line"},
		// An auditor reads the name as written: an escape, a right-to-left
		// override ("alice" shown for "ecila") or a byte that is not UTF-8
		// was stored as sent.
		{"POST", "/v1/approvals/a1/approve", `{"by":"\u202eecila"}`, "by", "by: at most 64 bytes on one line, printable"},
		{"POST", "/v1/approvals/a1/deny", `{"by":"ann\u001b[2J"}`, "by", "by: at most 64 bytes on one line, printable"},
		{"POST", "/v1/jobs/j1/pause?by=ann%E2%80%8B", nil, "by", "by: at most 64 bytes on one line, printable"},
		{"POST", "/v1/jobs/j1/pause?by=ann%ff", nil, "by", "by: at most 64 bytes on one line, printable"},
		{"GET", "/v1/runs?limit=-5", nil, "limit", "limit: want a number from 1 to "},
		// A page of runs is bounded like one of approvals; it was every run
		// a node keeps (128,000: 22 MB, 190 MB of the node's memory).
		{"GET", "/v1/runs?limit=2001", nil, "limit", "limit: want a number from 1 to 2000"},
		{"GET", "/v1/logs?kind=bogus", nil, "kind", "kind: want tool, llm, message or event"},
		{"GET", "/v1/logs?limit=-1", nil, "limit", "limit: want a number >= 0"},
		{"GET", "/v1/logs?after=x", nil, "after", "after: want an integer"},
		{"GET", "/v1/logs?wait=soon", nil, "wait", "wait: want a duration"},
		// The audit endpoint named the field of a body that did not decode
		// nowhere but in its message: param was null.
		{"POST", "/v1/audit/sql", `{"sql":5}`, "sql", "sql: got a JSON number, want a string"},
		{"POST", "/v1/audit/sql", `{"sql":"SELECT 1","max_rows":"5"}`, "max_rows", "max_rows: got a JSON string, want an integer"},
		{"POST", "/v1/audit/sql", `{"sql":"SELECT 1","bogus":1}`, "bogus", `unknown field "bogus"`},
	} {
		resp := send(t, tt.method, base+tt.path, token, tt.body)
		var e errorBody
		code := resp.StatusCode
		decodeBody(t, resp, &e)
		if code != 400 || e.Error.Type != ErrTypeInvalidRequest || deref(e.Error.Param) != tt.param || !strings.Contains(e.Error.Message, tt.msg) {
			t.Errorf("%s %s %v: %d %+v param %q; want 400, param %q, %q", tt.method, tt.path, tt.body, code, e.Error, deref(e.Error.Param), tt.param, tt.msg)
		}
		if strings.Contains(e.Error.Message, "invalid job: ") || strings.Contains(e.Error.Message, "invalid job \"j1\": invalid job") {
			t.Errorf("%s %s: the refusal says it twice: %q", tt.method, tt.path, e.Error.Message)
		}
	}
	var runs RunsPage
	resp := send(t, "GET", base+"/v1/runs?limit=2000", token, nil)
	if code := resp.StatusCode; code != 200 {
		t.Errorf("GET /v1/runs?limit=2000: %d, want 200", code)
	}
	decodeBody(t, resp, &runs)
}

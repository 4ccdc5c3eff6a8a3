package orchestrator

import (
	"net/http"
	"strings"
	"testing"
)

// A write of the jobs and approvals endpoints that the store cannot take
// (here: the store closed under the node, as at shutdown; a full disk or
// a read-only file answer the same) is a 503 with Retry-After and a
// message naming storage, not a 500 as if the node had a bug, and what
// was acknowledged before is still there.
func TestStoreUnavailableAnswers503(t *testing.T) {
	g := startGated(t, directNoop, "")
	ans, _ := g.chat("held")
	a := g.pending(t)
	for _, req := range []struct{ path, body string }{
		{"/v1/jobs", `{"id":"kept","schedule":"0 3 * * *","prompt":"read the meter"}`},
		{"/v1/jobs", `{"id":"live","schedule":"0 5 * * *","prompt":"read the pump"}`},
		{"/v1/jobs/kept/pause", ""},
	} {
		var body any
		if req.body != "" {
			body = req.body
		}
		resp := send(t, http.MethodPost, g.base+req.path, g.token, body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", req.path, resp.StatusCode)
		}
	}
	if err := g.node.store.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/jobs", `{"id":"lost","schedule":"0 4 * * *","prompt":"x"}`},
		{http.MethodPost, "/v1/jobs/live/pause", ""},
		{http.MethodPost, "/v1/jobs/kept/resume", ""},
		{http.MethodPost, "/v1/jobs/live/run", ""},
		{http.MethodDelete, "/v1/jobs/live", ""},
		{http.MethodPost, "/v1/approvals/" + a.ID + "/approve", `{"by":"alice"}`},
		{http.MethodPost, "/v1/approvals/" + a.ID + "/deny", `{"by":"alice"}`},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			resp := send(t, tc.method, g.base+tc.path, g.token, body)
			if resp.StatusCode != http.StatusServiceUnavailable {
				resp.Body.Close()
				t.Fatalf("status %d, want 503", resp.StatusCode)
			}
			if ra := resp.Header.Get("Retry-After"); ra == "" {
				t.Error("no Retry-After")
			}
			var e errorBody
			decodeBody(t, resp, &e)
			if e.Error.Type != ErrTypeNotReady || !strings.Contains(e.Error.Message, "storage unavailable") {
				t.Fatalf("error %+v", e.Error)
			}
		})
	}
	// What was acknowledged is stored; what was refused is not.
	if got := g.query(t, `SELECT job_id, paused FROM jobs ORDER BY job_id`); got != "[[kept 1] [live 0]]" {
		t.Fatalf("jobs after the refused writes: %s", got)
	}
	if got := g.query(t, `SELECT state FROM approvals WHERE approval_id = '`+a.ID+`'`); got != "[[pending]]" {
		t.Fatalf("approval after the refused decisions: %s", got)
	}
	g.node.Close()
	<-ans
}

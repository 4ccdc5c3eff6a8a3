package orchestrator

import (
	"testing"

	"github.com/evoclaw/evoclaw/actors"
)

// TestAnswerBodyIsStrict: a reply that is not {"answer": "..."} is 400
// naming the field, and leaves the question waiting; an empty answer is a
// reply (204) and reaches the model.
func TestAnswerBodyIsStrict(t *testing.T) {
	asked := false
	answer := askOverHTTP(t, "q-strict", func(p actors.Progress, base, token string) {
		asked = true
		for _, c := range []struct {
			body   string
			status int
			param  string
		}{
			{`{}`, 400, "answer"},
			{`{"answer":null}`, 400, "answer"},
			{`{"reply":"blue"}`, 400, "reply"},
			{`{"answer":"blue","by":"me"}`, 400, "by"},
			{`{"answer":5}`, 400, "answer"},
			{`{"answer":"blue"} {"answer":"red"}`, 400, ""},
			{`"blue"`, 400, ""},
			{``, 400, ""},
			{`{"answer":""}`, 204, ""},
			{`{"answer":"again"}`, 404, ""},
		} {
			r := send(t, "POST", base+"/v1/chat/questions/"+p.QuestionID, token, c.body)
			if r.StatusCode != c.status {
				r.Body.Close()
				t.Fatalf("answer %s: status %d, want %d", c.body, r.StatusCode, c.status)
			}
			if c.status == 204 {
				r.Body.Close()
				continue
			}
			var e errorBody
			decodeBody(t, r, &e)
			if got := deref(e.Error.Param); got != c.param || (c.status == 400 && e.Error.Type != ErrTypeInvalidRequest) {
				t.Fatalf("answer %s: error %+v param %q, want param %q", c.body, e.Error, got, c.param)
			}
		}
	})
	if !asked || answer != "filling []" {
		t.Fatalf("asked %v, answer %q", asked, answer)
	}
}

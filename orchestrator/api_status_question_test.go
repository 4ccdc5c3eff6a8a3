package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

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

// TestReplyRacingTheTimeout: a reply taken (204) as the question's time
// runs out reaches the model; one after it is refused (404) and the model
// gets the timeout. Before, the ask picked the reply or the timeout at
// random when both were there, and a reply answered 204 was lost about
// every other time.
func TestReplyRacingTheTimeout(t *testing.T) {
	for _, tc := range []struct {
		name       string
		replyFirst bool // the reply is taken before the time runs out
	}{{"reply, then the time runs out", true}, {"the time runs out, then a reply", false}} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQuestions(time.Minute)
			for round := range 200 {
				ctx, cancel := context.WithCancel(context.Background())
				var id string
				var answerErr error
				c := actors.Caller{ConversationID: "c", Person: true, Progress: func(p actors.Progress) {
					id = p.QuestionID
					if tc.replyFirst {
						answerErr = q.answer(id, "blue")
					}
					cancel()
				}}
				reply, err := q.ask(ctx, c, "which tank?")
				if !tc.replyFirst {
					answerErr = q.answer(id, "blue")
				}
				switch {
				case tc.replyFirst && (answerErr != nil || err != nil || reply != "blue"):
					t.Fatalf("round %d: reply taken (%v), the model got %q, %v", round, answerErr, reply, err)
				case !tc.replyFirst && (!errors.Is(answerErr, ErrQuestionUnknown) || !errors.Is(err, context.Canceled)):
					t.Fatalf("round %d: late reply %v, the model got %q, %v", round, answerErr, reply, err)
				}
			}
			if len(q.pending) != 0 {
				t.Fatalf("%d questions left waiting", len(q.pending))
			}
		})
	}
}

// Reply bodies come from the network: never a panic, and a body taken is
// exactly {"answer": "..."}: its answer encoded alone decodes the same.
func FuzzDecodeAnswer(f *testing.F) {
	for _, b := range []string{`{"answer":"blue"}`, `{"answer":""}`, `{"answer":null}`, `{}`, `{"answer":"a","by":"b"}`,
		`{"answer":"a"} {"answer":"b"}`, `"blue"`, `{"answer":"\u0000\ud800"}`, `{"ANSWER":"x"}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeAnswer(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := decodeAnswer(again); err != nil || back != req {
			t.Fatalf("%q taken as %+v; encoded again %s: %+v, %v", b, req, again, back, err)
		}
	})
}

// TestQuestionSaysHowLongItWaits: a question's progress event carries
// what is left of its time (timeout_ms), so that a client reading replies
// from input that may stay silent knows when to stop waiting; none when
// the wait has no deadline.
func TestQuestionSaysHowLongItWaits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none
	}{{"a minute", time.Minute}, {"no deadline", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQuestions(time.Minute)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.deadline > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), tc.deadline)
			}
			defer cancel()
			var got int64 = -1
			c := actors.Caller{ConversationID: "c", Person: true, Progress: func(p actors.Progress) {
				got = p.TimeoutMS
				cancel()
			}}
			_, _ = q.ask(ctx, c, "which tank?")
			if tc.deadline == 0 && got != 0 || tc.deadline > 0 && (got <= 0 || got > tc.deadline.Milliseconds()) {
				t.Fatalf("timeout_ms = %d, want %s", got, map[bool]string{true: "none", false: "in (0, deadline]"}[tc.deadline == 0])
			}
		})
	}
}

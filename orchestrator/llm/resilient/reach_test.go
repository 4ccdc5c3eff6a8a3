package resilient

import (
	"context"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// A link reported not answering keeps the first report's time and the
// last check's; a call that gets any answer from the server clears it, one
// that finds nobody or times out does not; a warm-up's answer clears it too.
func TestNotAnsweringClearedByAnAnswer(t *testing.T) {
	netErr := &llm.Error{Kind: llm.KindNetwork, Provider: "p", Message: "connection refused"}
	timeout := &llm.Error{Kind: llm.KindTimeout, Provider: "p", Message: "slow"}
	for _, tc := range []struct {
		name  string
		err   error // the call's; nil: it succeeds
		clear bool
	}{
		{"success", nil, true},
		{"server error answer", httpErr(500, 0), true},
		{"bad request answer", httpErr(400, 0), true},
		{"network", netErr, false},
		{"timeout", timeout, false},
		{"refused before sending", &llm.Error{Kind: llm.KindBadRequest, Provider: "p", Message: "prompt over the context window"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			var f *fake
			if tc.err == nil {
				f = answers("p")
			} else {
				f = answers("p", tc.err)
			}
			c, err := New([]Link{{Provider: f, Model: "m"}}, opts(clk))
			if err != nil {
				t.Fatal(err)
			}
			start := clk.Now()
			c.NotAnswering(0, "connection refused")
			clk.advance(time.Minute)
			c.NotAnswering(0, "host h not found")
			if h := c.Health()[0]; !h.NotAnsweringSince.Equal(start) || !h.CheckedAt.Equal(start.Add(time.Minute)) || h.NotAnswering != "host h not found" {
				t.Fatalf("after two reports: %+v", h)
			}
			c.Complete(context.Background(), llm.Request{})
			h := c.Health()[0]
			if cleared := h.NotAnsweringSince.IsZero() && h.CheckedAt.IsZero() && h.NotAnswering == ""; cleared != tc.clear {
				t.Fatalf("after the call (%v): %+v", tc.err, h)
			}
		})
	}
	c, err := New([]Link{{Provider: answers("p"), Model: "m"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.NotAnswering(0, "connection refused")
	c.NotAnswering(5, "out of range is ignored")
	if err := c.WarmUp(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if h := c.Health()[0]; !h.NotAnsweringSince.IsZero() {
		t.Fatalf("after a warm-up: %+v", h)
	}
	c.NotAnswering(0, "connection refused")
	c.Answering(0)
	if h := c.Health()[0]; !h.NotAnsweringSince.IsZero() {
		t.Fatalf("after Answering: %+v", h)
	}
}

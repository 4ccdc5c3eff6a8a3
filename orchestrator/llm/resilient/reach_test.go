package resilient

import (
	"context"
	"fmt"
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

// A check that reached the server ends a cool-down that nobody answering
// there caused, and only that one: a name look-up (Answering) ends none,
// nor does an answer after failures the server itself gave.
func TestReachedEndsANetworkCooldown(t *testing.T) {
	netErr := &llm.Error{Kind: llm.KindNetwork, Provider: "p", Message: "connection refused"}
	for _, tc := range []struct {
		name    string
		err     error
		reached bool // Reached, else Answering
		cooling bool // after it
	}{
		{"reached after network failures", netErr, true, false},
		{"looked up after network failures", netErr, false, true},
		{"reached after server errors", httpErr(500, 0), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			o := opts(clk)
			o.FailureThreshold, o.Cooldown = 1, time.Hour
			c, err := New([]Link{{Provider: answers("p", tc.err, tc.err, tc.err), Model: "m"}}, o)
			if err != nil {
				t.Fatal(err)
			}
			c.Complete(context.Background(), llm.Request{})
			if c.Health()[0].CoolingUntil.IsZero() {
				t.Fatalf("not cooling after a failed call: %+v", c.Health()[0])
			}
			if tc.reached {
				c.Reached(0)
			} else {
				c.Answering(0)
			}
			if h := c.Health()[0]; h.CoolingUntil.IsZero() == tc.cooling {
				t.Fatalf("after the check: %+v, want cooling %v", h, tc.cooling)
			}
		})
	}
}

// OnUnreachable is told when a call finds nobody answering at the link's
// server, for every link of that server (same Limiter), and not for an
// answer, a timeout or a link of another server.
func TestOnUnreachable(t *testing.T) {
	netErr := &llm.Error{Kind: llm.KindNetwork, Provider: "p", Message: "connection refused"}
	timeout := &llm.Error{Kind: llm.KindTimeout, Provider: "p", Message: "slow"}
	for _, tc := range []struct {
		name string
		err  error
		want [3]int // calls of each link's OnUnreachable
	}{
		{"network", netErr, [3]int{1, 1, 0}},
		{"server error", httpErr(500, 0), [3]int{}},
		{"timeout", timeout, [3]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [3]int
			server := NewLimiter(1, 0)
			links := make([]Link, 3)
			for i := range links {
				links[i] = Link{Provider: answers("p", tc.err), Model: fmt.Sprint("m", i), OnUnreachable: func() { got[i]++ }}
			}
			links[0].Limiter, links[1].Limiter = server, server               // links 0 and 1 share a server
			links[1].Provider, links[2].Provider = answers("p"), answers("q") // the fallback answers
			c, err := New(links, opts(newClock()))
			if err != nil {
				t.Fatal(err)
			}
			c.Complete(context.Background(), llm.Request{})
			if got != tc.want {
				t.Fatalf("OnUnreachable calls %v, want %v", got, tc.want)
			}
		})
	}
}

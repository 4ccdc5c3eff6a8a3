package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// status tells the registry that agent id reported online or offline.
func (h *harness) status(id string, online bool) {
	s := wire.PresenceOffline
	if online {
		s = wire.PresenceOnline
	}
	h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: id, Status: wire.Status{AgentID: id, Status: s}})
}

// known reports whether the Catalog holds agent id, and its gauges exist.
func (h *harness) known(id string) (inCatalog, gauged bool) {
	_, inCatalog = h.edges.Catalog().Agents[id]
	return inCatalog, h.edges.gauges.lookup(id) != nil
}

// TestAgentsKnownAreBoundedByDefault: agent ids heard of once each (an
// offline status, as a retained message of an agent long gone) leave at
// most DefaultMaxAgents agents known, in the Catalog and in the gauges;
// the online agent stays. Every id used to stay for the node's life.
func TestAgentsKnownAreBoundedByDefault(t *testing.T) {
	// A tick of a second, not the harness's 20 ms: the test needs none,
	// and a thousand agents ticking at 50 Hz took the emulated ARM board's
	// CPU.
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) { o.TickInterval = time.Second }, nil)
	h.edge.others.Store(true)
	n := DefaultMaxAgents + 200
	for i := range n {
		h.status(fmt.Sprintf("ghost%05d", i), false)
	}
	newest := fmt.Sprintf("ghost%05d", n-1)
	testenv.Eventually(t, 30*time.Second, func() bool { c, _ := h.known(newest); return c }, "the newest agent known")
	gauges := func() int {
		h.edges.gauges.mu.Lock()
		defer h.edges.gauges.mu.Unlock()
		return len(h.edges.gauges.byID)
	}
	testenv.Eventually(t, 5*time.Second, func() bool {
		return len(h.edges.Catalog().Agents) <= DefaultMaxAgents && gauges() <= DefaultMaxAgents
	}, fmt.Sprintf("at most %d agents known", DefaultMaxAgents))
	if !h.edges.Catalog().Agents["pi-1"].Online {
		t.Fatalf("pi-1 = %+v: an online agent must stay known", h.edges.Catalog().Agents["pi-1"])
	}
}

// TestForgetAgents: an agent offline for ForgetAfter is forgotten and
// known anew when heard from again; past MaxAgents a new agent takes the
// place of the one heard from longest ago that is offline, and is ignored
// while every agent known is online.
func TestForgetAgents(t *testing.T) {
	for _, tc := range []struct {
		name string
		tune func(*EdgeOptions)
		run  func(t *testing.T, h *harness)
	}{
		{"offline past forget_after", func(o *EdgeOptions) { o.ForgetAfter = 150 * time.Millisecond }, func(t *testing.T, h *harness) {
			h.status("gone", false)
			testenv.Eventually(t, 5*time.Second, func() bool { c, _ := h.known("gone"); return c }, "gone known")
			testenv.Eventually(t, 5*time.Second, func() bool { c, g := h.known("gone"); return !c && !g }, "gone forgotten")
			if !h.edges.Catalog().Agents["pi-1"].Online {
				t.Fatal("pi-1, online, was forgotten")
			}
			h.status("gone", true)
			testenv.Eventually(t, 5*time.Second, func() bool { return h.edges.Catalog().Agents["gone"].Online }, "gone known again, online")
		}},
		{"max_agents: the oldest offline makes room", func(o *EdgeOptions) { o.ForgetAfter, o.MaxAgents = -1, 3 }, func(t *testing.T, h *harness) {
			h.status("old", false)
			testenv.Eventually(t, 5*time.Second, func() bool { c, _ := h.known("old"); return c }, "old known")
			h.status("mid", false)
			testenv.Eventually(t, 5*time.Second, func() bool { c, _ := h.known("mid"); return c }, "mid known")
			h.status("new", false)
			testenv.Eventually(t, 5*time.Second, func() bool {
				n, _ := h.known("new")
				o, _ := h.known("old")
				m, _ := h.known("mid")
				return n && m && !o
			}, "new known in place of old")
			if got := len(h.edges.Catalog().Agents); got != 3 {
				t.Fatalf("%d agents known, want 3", got)
			}
		}},
		{"max_agents: all online", func(o *EdgeOptions) { o.ForgetAfter, o.MaxAgents = -1, 2 }, func(t *testing.T, h *harness) {
			h.status("b", true)
			testenv.Eventually(t, 5*time.Second, func() bool { return h.edges.Catalog().Agents["b"].Online }, "b online")
			h.status("c", false)
			h.status("b", false)
			testenv.Eventually(t, 5*time.Second, func() bool { return !h.edges.Catalog().Agents["b"].Online }, "b offline")
			// c came while b was online: ignored. Heard again, it takes b's place.
			if c, _ := h.known("c"); c {
				t.Fatal("c known past max_agents while every agent was online")
			}
			h.status("c", false)
			testenv.Eventually(t, 5*time.Second, func() bool { c, _ := h.known("c"); b, _ := h.known("b"); return c && !b }, "c known in place of b")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessEdges(t, echoTranscript, nil, tc.tune, nil)
			h.edge.others.Store(true)
			tc.run(t, h)
		})
	}
}

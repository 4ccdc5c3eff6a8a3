package actors

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
)

// fakeAddresses is an EdgeOptions.AgentAddress whose answer a test sets.
type fakeAddresses struct {
	mu   sync.Mutex
	addr string // "" : not connected
}

func (f *fakeAddresses) set(a string) {
	f.mu.Lock()
	f.addr = a
	f.mu.Unlock()
}

func (f *fakeAddresses) lookup(string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.addr == "" {
		return "", errors.New("not connected here")
	}
	return f.addr, nil
}

// TestAgentOnlineRecordsOrigin: agent_online says on which host, with which
// version and from which address the agent came online, each only as
// known (the public agent says no host; a report that brings an agent
// online before its status knows none), and again, with changed, when an
// online status comes with another origin while the agent counts as online.
func TestAgentOnlineRecordsOrigin(t *testing.T) {
	addrs := &fakeAddresses{}
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) { o.AgentAddress = addrs.lookup }, nil)
	status := func(presence, host, version string) *StatusIn {
		return &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: presence, Host: wire.LooseString(host), Version: wire.LooseString(version)}}
	}
	heartbeat, err := wire.NewReport("pi-1", "monitor", wire.ReportHeartbeat, time.Now().Unix(), map[string]any{"uptime_sec": 1})
	if err != nil {
		t.Fatal(err)
	}
	online := persistence.EventAgentOnline
	steps := []struct {
		name string
		addr string
		msg  any
		// kind and detail of the event the step writes; "" : none.
		kind string
		want map[string]any
	}{
		// newHarnessEdges made it online with a status of the public
		// agent's shape, before any address was known.
		{name: "public agent", kind: online, want: map[string]any{"why": "agent reported online", "address_unknown": "not connected here"}},
		{name: "offline", msg: status(wire.PresenceOffline, "", ""), kind: persistence.EventAgentOffline, want: map[string]any{"why": "agent reported offline"}},
		{name: "evoclaw agent", addr: "192.0.2.7:50123", msg: status(wire.PresenceOnline, "pi-kitchen", "v1.4.0"), kind: online,
			want: map[string]any{"why": "agent reported online", "host": "pi-kitchen", "version": "v1.4.0", "address": "192.0.2.7:50123"}},
		{name: "same origin again", addr: "192.0.2.7:50123", msg: status(wire.PresenceOnline, "pi-kitchen", "v1.4.0")},
		{name: "upgraded, reconnected", addr: "192.0.2.7:50999", msg: status(wire.PresenceOnline, "pi-kitchen", "v1.5.0"), kind: online,
			want: map[string]any{"why": "online status with another host, version or address", "changed": true, "host": "pi-kitchen", "version": "v1.5.0", "address": "192.0.2.7:50999"}},
		{name: "offline again", msg: status(wire.PresenceOffline, "", ""), kind: persistence.EventAgentOffline, want: map[string]any{"why": "agent reported offline"}},
		// A report first: what the last status said held for the
		// connection that ended, so the host is not claimed.
		{name: "report first", addr: "198.51.100.2:40000", msg: &ReportIn{AgentID: "pi-1", Report: heartbeat}, kind: online,
			want: map[string]any{"why": "report received", "address": "198.51.100.2:40000"}},
		{name: "then its status", addr: "198.51.100.2:40000", msg: status(wire.PresenceOnline, "pi-garage", "v1.5.0"), kind: online,
			want: map[string]any{"why": "online status with another host, version or address", "changed": true, "host": "pi-garage", "version": "v1.5.0", "address": "198.51.100.2:40000"}},
	}
	wantEvents := 0
	for _, s := range steps {
		addrs.set(s.addr)
		if s.msg != nil {
			h.sys.Root.Send(h.edges.PID, s.msg)
		}
		if s.kind == "" {
			barrier(t, h)
			continue
		}
		wantEvents++
		ev, got := nthEvent(t, h, wantEvents, s.name)
		if ev.Kind != s.kind || ev.AgentID != "pi-1" || !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s: event %s %s %s, want %s %v", s.name, ev.Kind, ev.AgentID, ev.Detail, s.kind, s.want)
		}
	}
	time.Sleep(100 * time.Millisecond) // an event a step should not have written
	if n := len(h.events.All()); n != wantEvents {
		t.Fatalf("%d events, want %d: %v", n, wantEvents, h.events.kinds())
	}
}

// nthEvent waits for the nth event h recorded and returns it with its
// detail decoded; name says which step awaits it.
func nthEvent(t *testing.T, h *harness, n int, name string) (persistence.Event, map[string]any) {
	t.Helper()
	testenv.Eventually(t, 5*time.Second, func() bool { return len(h.events.All()) >= n }, name+": its event")
	ev := h.events.All()[n-1]
	var got map[string]any
	if err := json.Unmarshal(ev.Detail, &got); err != nil {
		t.Fatalf("%s: detail %s: %v", name, ev.Detail, err)
	}
	return ev, got
}

// barrier returns once pi-1's actor handled what was sent to it before:
// a ping goes through the same mailbox, and its answer comes after.
func barrier(t *testing.T, h *harness) {
	t.Helper()
	// inbox, not actor.NewFuture: a future's id ("future$N") can panic the
	// registry on a 32-bit board (pidname.go).
	replyTo, replies := inbox(t, h.sys)
	cmd := wire.Command{Command: wire.CmdPing, Payload: json.RawMessage(`{}`), RequestID: "barrier-" + time.Now().Format("150405.000000000")}
	h.sys.Root.Send(h.edges.PID, &Dispatch{AgentID: "pi-1", Command: cmd, ReplyTo: replyTo, Deadline: time.Now().Add(5 * time.Second)})
	receive(t, replies, 5*time.Second)
}

// TestAgentOnlineWithoutAddressLookup: a registry given no AgentAddress
// says the address was not looked up rather than leave it out.
func TestAgentOnlineWithoutAddressLookup(t *testing.T) {
	h := newHarnessEdges(t, echoTranscript, nil, nil, nil)
	testenv.Eventually(t, 5*time.Second, func() bool { return len(h.events.All()) == 1 }, "agent_online")
	var got map[string]any
	if err := json.Unmarshal(h.events.All()[0].Detail, &got); err != nil {
		t.Fatal(err)
	}
	if got["address_unknown"] == nil || got["address"] != nil || got["host"] != nil {
		t.Fatalf("detail %v", got)
	}
}

// TestAgentOriginOutlivesAHeartbeatTimeout: an agent marked offline only
// because nothing was heard for the heartbeat timeout may come back over
// the same connection, with a report and no new status: its agent_online
// still names the host its last status gave. An offline status (its last
// will) ends that.
func TestAgentOriginOutlivesAHeartbeatTimeout(t *testing.T) {
	addrs := &fakeAddresses{addr: "192.0.2.9:41000"}
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) {
		o.AgentAddress, o.HeartbeatTimeout = addrs.lookup, time.Second
	}, nil)
	h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: wire.PresenceOnline, Host: "pi-attic", Version: "v2.0.0"}})
	testenv.Eventually(t, 5*time.Second, func() bool {
		return strings.Count(strings.Join(h.events.kinds(), ","), persistence.EventAgentOffline) == 1
	}, "offline by the heartbeat timeout")
	heartbeat, err := wire.NewReport("pi-1", "monitor", wire.ReportHeartbeat, time.Now().Unix(), map[string]any{"uptime_sec": 1})
	if err != nil {
		t.Fatal(err)
	}
	h.sys.Root.Send(h.edges.PID, &ReportIn{AgentID: "pi-1", Report: heartbeat})
	var last persistence.Event
	testenv.Eventually(t, 5*time.Second, func() bool {
		all := h.events.All()
		last = all[len(all)-1]
		return last.Kind == persistence.EventAgentOnline && strings.Contains(string(last.Detail), "report received")
	}, "online again from its report")
	var d map[string]any
	if err := json.Unmarshal(last.Detail, &d); err != nil {
		t.Fatal(err)
	}
	if d["host"] != "pi-attic" || d["version"] != "v2.0.0" || d["address"] != "192.0.2.9:41000" {
		t.Fatalf("detail %v", d)
	}
}

// TestAgentOnlineQuotaReachedIsMarked: the first agent_online the event
// quota leaves out is stored all the same, marked quota_reached, so that
// the last agent_online before a call does not name an origin the agent
// may have left; the rest are left out, and the next stored one counts
// them, the marked one not among them, nor among the quota's refusals
// (the suppressed metric). Before, they were left out
// silently: an agent that used the window's events up (its own online
// statuses, one after another) then connected from elsewhere unrecorded.
func TestAgentOnlineQuotaReachedIsMarked(t *testing.T) {
	addrs := &fakeAddresses{}
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	quota := NewEventQuota(2, time.Hour)
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) {
		o.AgentAddress, o.EventQuota, o.Now = addrs.lookup, quota, now
	}, nil)
	online := func() []map[string]any {
		var out []map[string]any
		for _, ev := range h.events.All() {
			if ev.Kind != persistence.EventAgentOnline {
				continue
			}
			var d map[string]any
			if err := json.Unmarshal(ev.Detail, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
		return out
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return len(online()) == 1 }, "the first agent_online")
	status := func(host, addr string) {
		addrs.set(addr)
		h.sys.Root.Send(h.edges.PID, &StatusIn{AgentID: "pi-1", Status: wire.Status{AgentID: "pi-1", Status: wire.PresenceOnline, Host: wire.LooseString(host)}})
		barrier(t, h)
	}
	status("pi-kitchen", "192.0.2.7:50123")    // the second: the quota's last
	status("flood-1", "192.0.2.7:50123")       // left out, marked
	status("flood-2", "192.0.2.7:50123")       // left out
	status("pi-elsewhere", "203.0.113.5:4000") // left out
	time.Sleep(100 * time.Millisecond)         // an event that should not be written
	got := online()
	if len(got) != 3 || got[1]["host"] != "pi-kitchen" || got[1]["quota_reached"] != nil ||
		got[2]["host"] != "flood-1" || got[2]["quota_reached"] != true {
		t.Fatalf("agent_online events %v: want the second, then the first left out marked quota_reached, then none", got)
	}
	mu.Lock()
	clock = clock.Add(2 * time.Hour)
	mu.Unlock()
	status("pi-back", "192.0.2.7:50200")
	testenv.Eventually(t, 5*time.Second, func() bool { return len(online()) == 4 }, "the agent_online of a new window")
	if last := online()[3]; last["host"] != "pi-back" || last["quota_reached"] != nil || last["suppressed_before"] != float64(2) {
		t.Fatalf("agent_online %v: want pi-back, with the 2 left out unmarked counted", last)
	}
	// What evoclaw_audit_events_suppressed_total reads: the marked one was
	// stored, not suppressed (it counted there before).
	if n := quota.Refused(); n != 2 {
		t.Fatalf("the quota counts %d events refused, want the 2 not stored", n)
	}
}

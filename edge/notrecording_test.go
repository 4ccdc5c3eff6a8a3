package edge

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// notRecordingAgent runs an agent on a 2 MiB tmpfs (root only) with a
// heartbeat and a status gap of the given lengths, and a watcher of its
// statuses; it returns the agent, its data directory, the statuses and a
// commander.
func notRecordingAgent(t *testing.T, id string, heartbeat, gap time.Duration) (*Agent, string, *mqtttest.Inbox, *mqtttest.Commander) {
	t.Helper()
	dataDir := t.TempDir()
	mountSmall(t, dataDir)
	url := mqtttest.StartEmbedded(t)
	statuses := &mqtttest.Inbox{}
	watcher := mqtttest.Connect(t, mqttc.Options{BrokerURL: url, ClientID: "watcher"})
	if err := watcher.Subscribe(wire.StatusTopic(id), 1, statuses.Handle); err != nil {
		t.Fatal(err)
	}
	cfg := Config{AgentID: id, DataDir: dataDir, MQTT: MQTTConf{Broker: url}, HeartbeatInterval: Duration{Duration: heartbeat},
		Builtin: toolbox.Builtin{Groups: []string{"coding"}, Workspace: t.TempDir(), Sandbox: "none"}, Skills: SkillConf{Permissions: []string{"shell"}}}
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.notRecordingGap = gap
	runAgent(t, a, 10*time.Second)
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "fake-orchestrator"}, id)
	return a, dataDir, statuses, k
}

// onlineStatuses decodes the online statuses received so far.
func onlineStatuses(t *testing.T, in *mqtttest.Inbox, id string) []wire.Status {
	t.Helper()
	var out []wire.Status
	for _, m := range in.All() {
		s, err := wire.DecodeStatus(id, m.Payload)
		if err != nil {
			t.Fatalf("status %s: %v", m.Payload, err)
		}
		if s.Status == wire.PresenceOnline {
			out = append(out, s)
		}
	}
	return out
}

// TestStatusSaysNotRecording: an agent whose disk fills publishes its
// online status again saying why it cannot record, and again without it
// once there is room, at its next heartbeat with no command needed. Its status said online and nothing more: the node kept
// listing it healthy while it refused every command.
func TestStatusSaysNotRecording(t *testing.T) {
	const id = "pi-nr"
	_, dataDir, statuses, k := notRecordingAgent(t, id, 100*time.Millisecond, time.Millisecond)
	// The status reaches the watcher through the broker after the agent
	// is running: wait for it (reading at once failed CI once).
	testenv.Eventually(t, 5*time.Second, func() bool { return len(onlineStatuses(t, statuses, id)) > 0 }, "the online status at start")
	if s := onlineStatuses(t, statuses, id); len(s) != 1 || s[0].NotRecording != "" {
		t.Fatalf("online statuses at start %+v, want one saying nothing of recording", s)
	}
	fillDir(t, dataDir)
	r := k.Ask("c1", `{"command":"tool","payload":{"tool":"bash","parameters":{"command":"true"}},"request_id":"c1"}`)
	if r.ReportType != wire.ReportError {
		t.Fatalf("command on a full disk: %s, want an error", r.ReportType)
	}
	var said wire.Status
	testenv.Eventually(t, 5*time.Second, func() bool {
		s := onlineStatuses(t, statuses, id)
		said = s[len(s)-1]
		return said.NotRecording != ""
	}, "an online status saying the agent cannot record")
	if !strings.Contains(string(said.NotRecording), "full") || len(said.NotRecording) > wire.MaxNotRecordingLen {
		t.Fatalf("not_recording %q, want the full disk named", said.NotRecording)
	}
	// Room again: the next heartbeat's check says so, with no command.
	if err := os.Remove(filepath.Join(dataDir, "filler")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, func() bool {
		s := onlineStatuses(t, statuses, id)
		return s[len(s)-1].NotRecording == ""
	}, "an online status no longer saying the agent cannot record")
	if n := len(onlineStatuses(t, statuses, id)); n != 3 {
		t.Fatalf("%d online statuses, want 3: start, not recording, recording again", n)
	}
	r = k.Ask("c2", `{"command":"tool","payload":{"tool":"bash","parameters":{"command":"true"}},"request_id":"c2"}`)
	if e, _ := wire.DecodeErrorPayload(r); r.ReportType == wire.ReportError {
		t.Fatalf("command once there is room: %+v", e)
	}
}

// TestNotRecordingStatusBounded: a disk that fills and empties again and
// again sends an online status at most once per gap, however often it
// flaps and however many commands are refused.
func TestNotRecordingStatusBounded(t *testing.T) {
	const (
		id  = "pi-flap"
		gap = 400 * time.Millisecond
		run = 2 * time.Second
	)
	_, dataDir, statuses, k := notRecordingAgent(t, id, 20*time.Millisecond, gap)
	start := time.Now()
	for i := 0; time.Since(start) < run; i++ {
		fillDir(t, dataDir)
		r := k.Ask(fmt.Sprintf("f%d", i), fmt.Sprintf(`{"command":"tool","payload":{"tool":"bash","parameters":{"command":"true"}},"request_id":"f%d"}`, i))
		if r.ReportType != wire.ReportError {
			t.Fatalf("command on a full disk: %s", r.ReportType)
		}
		if err := os.Remove(filepath.Join(dataDir, "filler")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	n := len(onlineStatuses(t, statuses, id)) - 1 // the first is the connect's
	if limit := int(run/(gap-gap/10)) + 2; n < 1 || n > limit {
		t.Fatalf("%d online statuses over %s of a flapping disk, want 1 to %d (one per %s)", n, run, limit, gap)
	}
	t.Logf("%d online statuses over %s of a flapping disk", n, run)
}

// TestRefusedCommandSaysNotRecordingAtOnce: a command refused because the
// trail cannot record makes the status say so at once, not at the next
// heartbeat (an hour away here).
func TestRefusedCommandSaysNotRecordingAtOnce(t *testing.T) {
	const id = "pi-now"
	_, dataDir, statuses, k := notRecordingAgent(t, id, time.Hour, time.Millisecond)
	fillDir(t, dataDir)
	if r := k.Ask("c1", `{"command":"tool","payload":{"tool":"bash","parameters":{"command":"true"}},"request_id":"c1"}`); r.ReportType != wire.ReportError {
		t.Fatalf("command on a full disk: %s, want an error", r.ReportType)
	}
	testenv.Eventually(t, 2*time.Second, func() bool {
		s := onlineStatuses(t, statuses, id)
		return len(s) > 0 && s[len(s)-1].NotRecording != ""
	}, "an online status saying the agent cannot record, right after the refusal")
}

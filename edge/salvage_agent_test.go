package edge

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestTooDeepCommandIsAnswered: a command nested deeper than the decoder
// reads (encoding/json stops at 10000 levels) is answered invalid_command
// for its top-level request_id at once, instead of leaving its sender to
// wait out its timeout; a request_id only deeper in the message, or given
// twice, is never answered for.
func TestTooDeepCommandIsAnswered(t *testing.T) {
	t.Parallel()
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0", AllowAnonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	skills, err := filepath.Abs("../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{AgentID: "pi-deep", DataDir: t.TempDir(), MQTT: MQTTConf{Broker: b.URL()}, Skills: SkillConf{Dirs: []string{skills}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a, 10*time.Second)
	k := mqtttest.NewCommander(t, mqttc.Options{BrokerURL: b.URL(), ClientID: "fake-orchestrator-deep"}, "pi-deep")
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name, payload string
		answer        string // the request_id answered; "" for none
		silent        []string
	}{
		{"deep parameters", `{"command":"tool","request_id":"d1","payload":{"tool":"count","request_id":"in1","parameters":{"x":` + deep(20000) + `}}}`, "d1", []string{"in1"}},
		{"deep after the id", `{"request_id":"d2","command":"ping","payload":` + strings.Replace(deep(100000), "[]", `["request_id","x"]`, 1) + `}`, "d2", nil},
		{"escaped key", `{"command":"ping","request\u005fid":"d3","payload":` + deep(15000) + `}`, "d3", nil},
		{"id only nested", `{"command":"tool","payload":{"request_id":"in4","x":` + deep(20000) + `}}`, "", []string{"in4"}},
		{"id in a string", `{"command":"ping","pad":"\"request_id\":\"in5\"","payload":` + deep(20000) + `}`, "", []string{"in5"}},
		{"id twice", `{"command":"ping","request_id":"in6a","payload":` + deep(20000) + `,"request_id":"in6b"}`, "", []string{"in6a", "in6b"}},
		{"truncated", `{"command":"ping","request_id":"in7","payload":` + deep(20000)[:30000], "", []string{"in7"}},
	}
	for i, tt := range tests {
		k.Send(tt.payload)
		// Refusals are answered in order: once a marker sent after it is
		// answered, an answer for tt would have come.
		marker := "marker-" + string(rune('a'+i))
		r := k.Ask(marker, `{"command":"ping","request_id":"`+marker+`","payload":`+deep(12000)+`}`)
		if r.ReportType != wire.ReportError {
			t.Fatalf("%s: marker answered %s, want error", tt.name, r.ReportType)
		}
		if tt.answer != "" {
			got := k.Reports(tt.answer)
			if len(got) != 1 {
				t.Fatalf("%s: %d answers for %s, want 1", tt.name, len(got), tt.answer)
			}
			res, err := wire.DecodeToolResult(got[0])
			if err != nil || got[0].ReportType != wire.ReportError || res.ErrorType != wire.ErrInvalidCommand || !strings.Contains(res.Error, "depth") {
				t.Fatalf("%s: answered %s %+v (%v), want an invalid_command error naming the depth", tt.name, got[0].ReportType, res, err)
			}
		}
		for _, id := range tt.silent {
			if got := k.Reports(id); len(got) != 0 {
				t.Fatalf("%s: answered for %s, which is not the command's top-level request_id: %+v", tt.name, id, got)
			}
		}
	}
}

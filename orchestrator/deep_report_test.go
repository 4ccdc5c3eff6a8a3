package orchestrator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// TestTooDeepResultEndsTheCall: an agent's result nested deeper than the
// decoder reads ends the tool call it names at once, as execution_failed,
// instead of leaving it to wait out its timeout; an answer whose request id
// cannot be read for sure (only deeper in the message, or from another
// agent's id) is still dropped, and the call times out.
func TestTooDeepResultEndsTheCall(t *testing.T) {
	t.Parallel()
	p, err := scripted.Parse([]byte(`{"name":"deep","turns":[
 {"content":"","tool_calls":[{"id":"c1","name":"deep-1__hello","arguments":{}}]},
 {"content":"{{result c1}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var wait Duration
	wait.Duration = 3 * time.Second
	node := startNode(t, Config{DataDir: t.TempDir(), Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}},
		Loop: LoopConf{Timeouts: map[string]TimeoutConf{"other": {Default: wait, Max: wait}}}}, Options{Provider: p})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	answer := make(chan string, 1) // the raw report the fake agent sends; R stands for the request id
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "fake-deep-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	publish := func(raw string) {
		go func() {
			_ = c.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic("deep-1"), Payload: []byte(raw), QoS: 1})
		}()
	}
	if err := c.Subscribe(wire.CommandsTopic("deep-1"), 1, func(m mqttc.Message) {
		cmd, err := wire.DecodeCommand(m.Payload)
		if err != nil {
			return
		}
		switch cmd.Command {
		case wire.CmdToolsList:
			r, _ := wire.NewReport("deep-1", "", wire.ReportResult, time.Now().Unix(), wire.ToolsList{RequestID: cmd.RequestID,
				Tools: []wire.ToolInfo{{Name: "hello", Description: "says hello", Parameters: map[string]any{"type": "object"}}}})
			b, _ := json.Marshal(r)
			publish(string(b))
		case wire.CmdTool:
			select {
			case raw := <-answer:
				publish(strings.ReplaceAll(raw, "R", cmd.RequestID))
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(wire.Status{AgentID: "deep-1", Status: wire.PresenceOnline})
	if err := c.Publish(ctx, mqttc.Message{Topic: wire.StatusTopic("deep-1"), Payload: st, QoS: 1}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { _, listed := node.agentTools("deep-1"); return listed }, "deep-1 listed")

	tests := []struct {
		name, report string
		want         string // the error type the call ends with
	}{
		{"envelope", `{"agent_id":"deep-1","report_type":"result","payload":{"request_id":"R","status":"success","result":` + deep + `}}`, "execution_failed"},
		{"flat result", `{"status":"success","request_id":"R","result":` + deep + `}`, "execution_failed"},
		{"error envelope", `{"report_type":"error","payload":{"x":` + deep + `,"request_id":"R"}}`, "execution_failed"},
		{"id only deeper", `{"report_type":"result","payload":{"result":[{"request_id":"R"}],"x":` + deep + `}}`, "timeout"},
		{"another agent", `{"agent_id":"other","report_type":"result","payload":{"request_id":"R","x":` + deep + `}}`, "timeout"},
		{"progress", `{"report_type":"progress","payload":{"request_id":"R","seq":1,"x":` + deep + `}}`, "timeout"},
	}
	for i, tt := range tests {
		answer <- tt.report
		ans, err := node.Chat(ctx, "deep-"+string(rune('a'+i)), "go")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(ans.Calls) != 1 || ans.Calls[0].Success || !strings.HasPrefix(ans.Text, "Error ("+tt.want+")") {
			t.Fatalf("%s: answer %q, calls %+v; want the call failed %s", tt.name, ans.Text, ans.Calls, tt.want)
		}
	}
}

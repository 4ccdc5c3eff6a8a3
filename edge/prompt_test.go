package edge

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// promptAgent starts an agent whose scripted model calls the count tool on
// counter, then answers with its result.
func promptAgent(t *testing.T) (p *mqtttest.Commander, counter string) {
	t.Helper()
	dir := t.TempDir()
	counter = filepath.Join(dir, "count")
	tr := filepath.Join(dir, "transcript.json")
	body := fmt.Sprintf(`{"name":"edge","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"count","arguments":{"file":%q}}]},
	  {"content":"answer: {{result c1}}"}]}`, counter)
	if err := os.WriteFile(tr, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return startAgent(t, func(c *Config) {
		c.LLM = LLMConf{Config: llm.Config{Endpoint: llm.Endpoint{Provider: "scripted"}, Transcript: tr}}
	}), counter
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestPromptRunsTheLocalLoopOncePerRequestID(t *testing.T) {
	p, counter := promptAgent(t)
	const cmd = `{"command":"prompt","payload":{"prompt":"count","enable_tools":true},"request_id":"pr-1"}`
	p.Send(cmd)
	first := p.Await("pr-1")
	res, err := wire.DecodePromptResult(first)
	if err != nil || res.Status != wire.StatusSuccess || res.Content != "answer: 1" || res.AgentID != "pi-t" ||
		len(res.ToolsExecuted) != 1 || res.ToolsExecuted[0].Tool != "count" || !res.ToolsExecuted[0].Success {
		t.Fatalf("prompt result %+v %v", res, err)
	}
	// A redelivery gets the stored report; the tool does not run again.
	p.Send(cmd)
	again := p.AwaitN("pr-1", 2)[1]
	if n := lines(t, counter); n != 1 {
		t.Fatalf("count ran %d times for one request_id", n)
	}
	if string(again.Payload) != string(first.Payload) {
		t.Fatalf("replayed report differs:\n%s\n%s", again.Payload, first.Payload)
	}
}

func TestPromptRefusals(t *testing.T) {
	p, counter := promptAgent(t)
	t.Run("tools disabled", func(t *testing.T) {
		p.Send(`{"command":"prompt","payload":{"prompt":"count","enable_tools":false},"request_id":"pr-2"}`)
		res, err := wire.DecodePromptResult(p.Await("pr-2"))
		if err != nil || res.Status != wire.StatusSuccess || !strings.Contains(res.Content, "tools are disabled") {
			t.Fatalf("prompt result %+v %v", res, err)
		}
		if n := lines(t, counter); n != 0 {
			t.Fatalf("a tool ran with tools disabled (%d)", n)
		}
	})
	t.Run("empty prompt", func(t *testing.T) {
		p.Send(`{"command":"prompt","payload":{"prompt":""},"request_id":"pr-3"}`)
		errorPayload(wire.ErrInvalidParams, `field "prompt": required`)(t, p.Await("pr-3"))
	})
}

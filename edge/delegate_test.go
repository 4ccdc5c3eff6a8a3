package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestPromptDelegatesThroughTheOrchestrator: a prompt that offers another
// agent's tool gets the loop a tool {agent}__{tool}; calling it sends a
// delegate report with the prompt's token, and the delegate_result the
// orchestrator sends back is the tool's result. With one worker, the
// result still reaches the loop that holds it (it skips the queue); a
// result nothing waits for and a malformed one are dropped.
func TestPromptDelegatesThroughTheOrchestrator(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "transcript.json")
	if err := os.WriteFile(tr, []byte(`{"name":"edge","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"pi2__probe","arguments":{"depth":3}}],"expect_tools":["pi2__probe","pi2__prompt"]},
	  {"content":"got: {{result c1}}"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var data string
	p := startAgent(t, func(c *Config) {
		c.LLM = LLMConf{Config: llm.Config{Endpoint: llm.Endpoint{Provider: "scripted"}, Transcript: tr}}
		c.Tools.MaxConcurrent = 1
		data = c.DataDir
	})
	p.Send(`{"command":"prompt","request_id":"pr-d","payload":{"prompt":"probe pi2","enable_tools":true,"delegation":{
	  "token":"tok-1","chain":["pi-t"],"tools":[
	    {"agent_id":"pi2","tool":"probe","description":"probes","parameters":{"type":"object","properties":{"depth":{"type":"integer"}}},"timeout_ms":20000},
	    {"agent_id":"pi2","prompt":true,"description":"ask pi2"}]}}}`)

	var req wire.DelegateRequest
	testenv.Eventually(t, 10*time.Second, func() bool {
		_, ok := p.Find(func(r wire.Report) bool {
			d, err := wire.DecodeDelegateRequest(r)
			if err == nil {
				req = d
			}
			return err == nil
		})
		return ok
	}, "a delegate report")
	if req.Token != "tok-1" || req.AgentID != "pi2" || req.Tool != "probe" || string(req.Parameters) != `{"depth":3}` ||
		req.TimeoutMS <= 0 || req.TimeoutMS > 20000 {
		t.Fatalf("delegate request %+v", req)
	}
	p.Send(`{"command":"delegate_result","request_id":"dlg-nobody","payload":{"status":"success","tool":"x","result":"stray","request_id":"dlg-nobody"}}`)
	p.Send(`{"command":"delegate_result","request_id":"` + req.RequestID + `","payload":{"status":"success","tool":"x","result":"no id"}}`)
	res, _ := json.Marshal(wire.ToolResult{Status: wire.StatusSuccess, Tool: "pi2__probe", Result: "depth 3 ok", RequestID: req.RequestID})
	p.Send(fmt.Sprintf(`{"command":"delegate_result","request_id":%q,"payload":%s}`, req.RequestID, res))

	out, err := wire.DecodePromptResult(p.Await("pr-d"))
	if err != nil || out.Status != wire.StatusSuccess || out.Content != "got: depth 3 ok" ||
		len(out.ToolsExecuted) != 1 || out.ToolsExecuted[0].Tool != "pi2__probe" || !out.ToolsExecuted[0].Success {
		t.Fatalf("prompt result %+v, %v", out, err)
	}
	if n := len(p.Reports("dlg-nobody")); n != 0 {
		t.Fatalf("a stray result was answered %d times", n)
	}
	// The prompt's audit row keeps the chain and the tools offered, not
	// the token or the schemas; its request log row, done, keeps none of
	// its arguments.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := sqlite.QueryReadOnly(ctx, filepath.Join(data, "audit.db"), `SELECT count(*) FROM request_log WHERE request_id = 'pr-d' AND state = 'done' AND params IS NULL`); err != nil || fmt.Sprint(res.Rows) != "[[1]]" {
		t.Fatalf("the done prompt's request log row: %v %v", res, err)
	}
	for _, q := range []string{`SELECT params FROM tool_calls WHERE request_id = 'pr-d' AND tool = 'prompt'`} {
		res, err := sqlite.QueryReadOnly(ctx, filepath.Join(data, "audit.db"), q)
		if err != nil || len(res.Rows) != 1 {
			t.Fatalf("%s: %v %v", q, res, err)
		}
		params := fmt.Sprint(res.Rows[0][0])
		if !strings.Contains(params, `"chain":["pi-t"]`) || !strings.Contains(params, `{"agent_id":"pi2","tool":"probe"}`) ||
			strings.Contains(params, "tok-1") || strings.Contains(params, "probes") {
			t.Fatalf("%s: %s", q, params)
		}
	}
}

// TestDelegationsBounded: at most MaxPendingDelegations calls wait; a
// result is delivered once, to its own call.
func TestDelegationsBounded(t *testing.T) {
	var d delegations
	chans := map[string]chan wire.ToolResult{}
	for i := range MaxPendingDelegations {
		id := fmt.Sprintf("r%d", i)
		ch, ok := d.add(id)
		if !ok {
			t.Fatalf("call %d refused", i)
		}
		chans[id] = ch
	}
	if _, ok := d.add("one-more"); ok {
		t.Fatal("a call beyond the bound was taken")
	}
	if !d.deliver(wire.ToolResult{RequestID: "r7", Result: "seven"}) || d.deliver(wire.ToolResult{RequestID: "r7"}) {
		t.Fatal("a result delivered other than once")
	}
	if got := (<-chans["r7"]).Result; got != "seven" {
		t.Fatalf("r7 got %q", got)
	}
	if d.deliver(wire.ToolResult{RequestID: "unknown"}) {
		t.Fatal("a result for no call delivered")
	}
	d.remove("r1")
	if _, ok := d.add("one-more"); !ok {
		t.Fatal("a freed place not taken")
	}
}

// TestRemoteToolNames: tools are named {agent}__{tool}, another agent's
// loop {agent}__prompt with a query; a name given twice keeps its first.
func TestRemoteToolNames(t *testing.T) {
	r := (&Agent{}).newRemoteTools(&wire.Delegation{Token: "t", Chain: []string{"a"}, Tools: []wire.RemoteTool{
		{AgentID: "b", Tool: "x", Description: "first"}, {AgentID: "b", Tool: "x", Description: "second"},
		{AgentID: "c", Prompt: true, Description: "ask c"}}})
	var names []string
	for _, d := range r.Defs() {
		names = append(names, d.Name+"="+d.Description)
	}
	if got := strings.Join(names, ","); got != "b__x=first,c__prompt=ask c" {
		t.Fatalf("defs %s", got)
	}
	if _, bad := r.Resolve(llm.ToolCall{Name: "c__x"}); bad == nil || bad.ErrorType() != wire.ErrNotFound {
		t.Fatalf("unknown name resolved: %v", bad)
	}
	tgt, bad := r.Resolve(llm.ToolCall{Name: "c__prompt", Arguments: json.RawMessage(`{"query":"hi"}`)})
	if bad != nil || tgt.Local == nil || tgt.Schema["required"] == nil {
		t.Fatalf("prompt target %+v %v", tgt, bad)
	}
}

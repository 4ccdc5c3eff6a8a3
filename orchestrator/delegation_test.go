package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

// startDemoAgent runs edge agent id with the shipped demo skill (sysinfo,
// disk_usage) in this process against node, answering prompts with the
// scripted transcript (none: it refuses prompts), its skills granted
// perms. It returns the agent's data directory once the node has its tool
// list.
func startDemoAgent(t *testing.T, node *Node, dir, id, transcript string, perms ...string) string {
	t.Helper()
	skills := filepath.Join(dir, id, "skills")
	if _, err := shipped.Install("demo", skills); err != nil {
		t.Fatal(err)
	}
	return startSkillAgent(t, node, dir, id, skills, transcript, perms...)
}

// startSkillAgent is startDemoAgent with the skills of the directory skills.
func startSkillAgent(t *testing.T, node *Node, dir, id, skills, transcript string, perms ...string) string {
	t.Helper()
	data := filepath.Join(dir, id, "edge")
	a, err := edge.New(edge.Config{AgentID: id, DataDir: data, MQTT: edge.MQTTConf{Broker: node.BrokerURL()},
		Skills: edge.SkillConf{Dirs: []string{skills}, Permissions: perms}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if transcript != "" {
		a.Provider = mustScript(t, transcript)
	}
	runAgent(t, a)
	testenv.Eventually(t, 20*time.Second, func() bool {
		_, listed := node.agentTools(id)
		return listed
	}, id+"'s tools listed")
	return data
}

// auditRows runs query on the audit database at path and prints its rows.
func auditRows(t *testing.T, path, query string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := sqlite.QueryReadOnly(ctx, path, query)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(res.Rows)
}

// delegationRules allow pi1 to use pi2's sysinfo and ask pi2's own loop,
// and pi2 to use the sysinfo of every pi*, with max_depth 1.
const delegationRules = `
[delegation]
max_depth = 1
[[delegation.allow]]
from = "pi1"
to = "pi2"
tools = ["sysinfo"]
prompt = true
[[delegation.allow]]
from = "pi2"
to = "pi*"
tools = ["sysinfo"]
`

// startDelegationNode starts a node with rules (evoclaw.toml lines) whose
// model replays transcript.
func startDelegationNode(t *testing.T, dir, rules, transcript string) *Node {
	t.Helper()
	cfg, _ := loadConfig(t, dir, "data_dir = \"orch\"\n[broker]\nlisten = \"127.0.0.1:0\"\nallow_anonymous = true\n"+rules, "")
	return startNode(t, cfg, Options{Provider: mustScript(t, transcript)})
}

// TestDelegationChain: the node asks pi1; pi1's own loop calls pi2's
// sysinfo (allowed: it runs on pi2, and the node's, pi1's and pi2's audit
// rows show it), and asks pi2's loop, which tries pi1's sysinfo (a loop
// pi1 → pi2 → pi1, refused) and pi3's (hop 2 beyond max_depth 1,
// refused). Refusals are permission_denied tool errors that say why,
// audited by the node, and nothing runs on pi1 or pi3 for them.
func TestDelegationChain(t *testing.T) {
	dir := t.TempDir()
	node := startDelegationNode(t, dir, delegationRules, `{"name":"orch","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"edge_call","arguments":{"agent_id":"pi1","query":"how is pi2?"}}]},
	  {"content":"ORCH[{{result c1}}]"}]}`)
	pi1 := startDemoAgent(t, node, dir, "pi1", `{"name":"pi1","turns":[
	  {"content":"","tool_calls":[{"id":"a","name":"pi2__sysinfo","arguments":{}},{"id":"b","name":"pi2__prompt","arguments":{"query":"look around"}}],
	   "expect_tools":["pi2__sysinfo","pi2__prompt","sysinfo"]},
	  {"content":"SYS[{{result a}}] ASKED[{{result b}}]"}]}`)
	pi2 := startDemoAgent(t, node, dir, "pi2", `{"name":"pi2","turns":[
	  {"content":"","tool_calls":[{"id":"x","name":"pi1__sysinfo","arguments":{}},{"id":"y","name":"pi3__sysinfo","arguments":{}}],
	   "expect_tools":["pi1__sysinfo","pi3__sysinfo"]},
	  {"content":"LOOP[{{result x}}] DEPTH[{{result y}}]"}]}`)
	pi3 := startDemoAgent(t, node, dir, "pi3", "")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ans, err := node.Chat(ctx, "deleg", "ask pi1 about pi2")
	if err != nil {
		t.Fatal(err)
	}

	// The call pi2 ran for pi1: one request_id on the node's row and pi2's.
	got := auditRows(t, node.AuditPath(), `SELECT agent_id, tool, status, request_id, call_id FROM tool_calls
		WHERE conversation_id = 'delegation:pi1' AND tool = 'pi2__sysinfo'`)
	var agent, tool, status, requestID, callID string
	if _, err := fmt.Sscanf(strings.Trim(got, "[]"), "%s %s %s %s %s", &agent, &tool, &status, &requestID, &callID); err != nil ||
		agent != "pi2" || status != "success" || !strings.HasPrefix(callID, "dlg-") {
		t.Fatalf("node's row of the delegated call: %s", got)
	}
	ran := auditRows(t, filepath.Join(pi2, "audit.db"), `SELECT tool, status, result_excerpt FROM tool_calls WHERE request_id = '`+requestID+`'`)
	if !strings.HasPrefix(ran, "[[sysinfo success ") {
		t.Fatalf("pi2's row of request %s: %s", requestID, ran)
	}
	excerpt := strings.TrimSuffix(strings.TrimPrefix(ran, "[[sysinfo success "), "]]")
	if strings.TrimSpace(excerpt) == "" || !strings.Contains(ans.Text, "SYS["+strings.TrimSpace(excerpt)) {
		t.Fatalf("answer %q lacks pi2's sysinfo output %q", ans.Text, excerpt)
	}
	// pi1's own loop audited its call of pi2's tool.
	if got := auditRows(t, filepath.Join(pi1, "audit.db"), `SELECT status, result_excerpt FROM tool_calls WHERE tool = 'pi2__sysinfo'`); got != "[[success "+excerpt+"]]" {
		t.Fatalf("pi1's row of pi2__sysinfo: %s, want pi2's output", got)
	}

	// The loop and the depth, refused by the node with the reason.
	for _, tt := range []struct{ tool, want string }{
		{"pi1__sysinfo", "delegation loop pi1 → pi2 → pi1"},
		{"pi3__sysinfo", "would be hop 2, [delegation] max_depth = 1"},
	} {
		got := auditRows(t, node.AuditPath(), `SELECT agent_id, status, error_type, error FROM tool_calls
			WHERE conversation_id = 'delegation:pi1>pi2' AND tool = '`+tt.tool+`'`)
		if !strings.Contains(got, " error permission_denied ") || !strings.Contains(got, tt.want) {
			t.Fatalf("node's row of refused %s: %s, want permission_denied with %q", tt.tool, got, tt.want)
		}
		if !strings.Contains(ans.Text, tt.want) {
			t.Fatalf("answer %q does not pass on %q", ans.Text, tt.want)
		}
		if got := auditRows(t, filepath.Join(pi2, "audit.db"), `SELECT status, error_type FROM tool_calls WHERE tool = '`+tt.tool+`'`); got != "[[error permission_denied]]" {
			t.Fatalf("pi2's row of %s: %s", tt.tool, got)
		}
	}
	// pi2's loop was asked once, by pi1, through the node.
	if got := auditRows(t, node.AuditPath(), `SELECT agent_id, status FROM tool_calls WHERE tool = 'pi2__prompt'`); got != "[[pi2 success]]" {
		t.Fatalf("node's row of pi2__prompt: %s", got)
	}
	// Nothing ran on pi1 but its prompt, nothing at all on pi3.
	if got := auditRows(t, filepath.Join(pi1, "audit.db"), `SELECT count(*) FROM tool_calls WHERE tool = 'sysinfo'`); got != "[[0]]" {
		t.Fatalf("pi1 ran sysinfo: %s", got)
	}
	if got := auditRows(t, filepath.Join(pi3, "audit.db"), `SELECT count(*) FROM tool_calls`); got != "[[0]]" {
		t.Fatalf("pi3 ran something: %s", got)
	}
}

// TestDelegationRefusesWhatTheRulesDoNot: an agent that holds a genuine
// token (from a prompt it was sent) and asks the node directly, past its
// own loop, for a tool the rules do not give it, for a tool an approval
// rule holds (a delegated call is never a way around [approvals]), with
// bad arguments, for itself, with another agent's token or a made-up one,
// is refused with an error that says why; nothing runs on the target and
// the refusals are audited. A redelivered request gets the same answer
// and is not run twice.
func TestDelegationRefusesWhatTheRulesDoNot(t *testing.T) {
	dir := t.TempDir()
	// The node prompts pi1; "pi1" below is a bare MQTT client that lists
	// one tool, keeps the prompt's token and never answers the prompt.
	node := startDelegationNode(t, dir, `
[delegation]
[[delegation.allow]]
from = "pi1"
to = "pi2"
tools = ["sysinfo", "disk_*"]
prompt = true
[approvals]
timeout = "1m"
[[approvals.rules]]
tools = ["pi2__disk_usage"]
`, `{"name":"orch","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"edge_call","arguments":{"agent_id":"pi1","query":"hello"}}]},
	  {"content":"done"}]}`)
	pi2 := startDemoAgent(t, node, dir, "pi2", "", "file_read")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	pi1 := startFakeAgent(t, ctx, node, "pi1")
	chat := make(chan error, 1)
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() { _, err := node.Chat(cctx, "hostile", "hello pi1"); chat <- err }()
	var p wire.PromptPayload
	select {
	case p = <-pi1.prompts:
	case <-ctx.Done():
		t.Fatal("no prompt reached pi1")
	}
	if p.Delegation == nil || p.Delegation.Token == "" || fmt.Sprint(p.Delegation.Chain) != "[pi1]" {
		t.Fatalf("prompt to pi1 carries delegation %+v", p.Delegation)
	}
	var names []string
	for _, rt := range p.Delegation.Tools {
		names = append(names, fmt.Sprintf("%s/%s/%v", rt.AgentID, rt.Tool, rt.Prompt))
	}
	if fmt.Sprint(names) != "[pi2//true pi2/disk_usage/false pi2/sysinfo/false]" {
		t.Fatalf("offered %v, want pi2's loop, disk_usage and sysinfo", names)
	}
	token := p.Delegation.Token

	for _, tt := range []struct {
		name    string
		req     wire.DelegateRequest
		errType wire.ErrorType
		want    string
	}{
		{"tool the rules do not give", wire.DelegateRequest{RequestID: "r-acl", Token: token, AgentID: "pi2", Tool: "reboot"}, wire.ErrPermissionDenied,
			`no [[delegation.allow]] rule lets agent "pi1" use tool "reboot" of agent "pi2" (a rule with from = "pi1", to = "pi2", tools = ["reboot"])`},
		{"held by an approval rule", wire.DelegateRequest{RequestID: "r-approval", Token: token, AgentID: "pi2", Tool: "disk_usage",
			Parameters: json.RawMessage(`{"path":"/"}`)}, wire.ErrPermissionDenied, "needs a person's approval"},
		{"bad arguments", wire.DelegateRequest{RequestID: "r-args", Token: token, AgentID: "pi2", Tool: "disk_usage"},
			wire.ErrInvalidParams, "path"},
		{"made-up token", wire.DelegateRequest{RequestID: "r-fake", Token: "dlg-00", AgentID: "pi2", Tool: "sysinfo"}, wire.ErrPermissionDenied,
			`is not one this orchestrator gave agent "pi1"`},
		{"itself", wire.DelegateRequest{RequestID: "r-self", Token: token, AgentID: "pi1", Tool: "hello"}, wire.ErrPermissionDenied,
			"delegation loop pi1 → pi1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pi1.delegate(ctx, tt.req)
			select {
			case r := <-pi1.results:
				if r.RequestID != tt.req.RequestID || r.Status != wire.StatusError || r.ErrorType != tt.errType || !strings.Contains(r.Error, tt.want) {
					t.Fatalf("answer %+v, want %s with %q", r, tt.errType, tt.want)
				}
			case <-ctx.Done():
				t.Fatal("no answer")
			}
			got := auditRows(t, node.AuditPath(), `SELECT status, error_type, error FROM tool_calls WHERE call_id = '`+tt.req.RequestID+`' AND conversation_id = 'delegation:pi1'`)
			if !strings.HasPrefix(got, "[[error "+string(tt.errType)+" ") || !strings.Contains(got, tt.want) {
				t.Fatalf("node's row: %s", got)
			}
		})
	}
	// pi1's token is not pi3's to use.
	pi3 := &fakeAgent{t: t, id: "pi3", c: pi1.c} // pi1's client, publishing as pi3
	pi3.delegate(ctx, wire.DelegateRequest{RequestID: "r-stolen", Token: token, AgentID: "pi2", Tool: "sysinfo"})
	testenv.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(auditRows(t, node.AuditPath(), `SELECT error FROM tool_calls WHERE call_id = 'r-stolen'`), `gave agent "pi3"`)
	}, "a stolen token refused")

	// An allowed call runs once, however often it is delivered.
	ok := wire.DelegateRequest{RequestID: "r-ok", Token: token, AgentID: "pi2", Tool: "sysinfo"}
	pi1.delegate(ctx, ok)
	var first wire.ToolResult
	select {
	case first = <-pi1.results:
	case <-ctx.Done():
		t.Fatal("no answer")
	}
	if first.RequestID != "r-ok" || first.Status != wire.StatusSuccess || first.Result == "" {
		t.Fatalf("allowed call answered %+v", first)
	}
	pi1.delegate(ctx, ok)
	select {
	case again := <-pi1.results:
		if again.RequestID != "r-ok" || again.Result != first.Result {
			t.Fatalf("redelivery answered %+v, want %+v", again, first)
		}
	case <-ctx.Done():
		t.Fatal("no answer to the redelivery")
	}
	if got := auditRows(t, filepath.Join(pi2, "audit.db"), `SELECT tool, count(*) FROM tool_calls GROUP BY tool`); got != "[[sysinfo 1]]" {
		t.Fatalf("pi2 ran %s, want sysinfo once and nothing else", got)
	}
	ccancel()
	<-chat
}

// TestDelegationRules: which calls the rules allow.
func TestDelegationRules(t *testing.T) {
	conf := DelegationConf{Allow: []DelegationRule{
		{From: "pi1", To: "pi2", Tools: []string{"sysinfo", "read_*"}},
		{From: "cam-?", To: "pi*", Prompt: true},
		{From: "*", To: "hub", Tools: []string{"[a-c]*"}},
	}}
	for _, tt := range []struct {
		from, to, tool string
		want           bool
	}{
		{"pi1", "pi2", "sysinfo", true},
		{"pi1", "pi2", "read_file", true},
		{"pi1", "pi2", "read", false},    // read_* needs the underscore
		{"pi1", "pi2", "", false},        // no prompt in that rule
		{"pi2", "pi1", "sysinfo", false}, // rules have a direction
		{"pi1", "pi3", "sysinfo", false},
		{"cam-1", "pi9", "", true},
		{"cam-1", "pi9", "sysinfo", false}, // prompt only
		{"cam-12", "pi9", "", false},       // ? is one character
		{"anyone", "hub", "apply", true},
		{"anyone", "hub", "delete", false},
		{"anyone", "hub2", "apply", false},
	} {
		if _, got := conf.allows(tt.from, tt.to, tt.tool); got != tt.want {
			t.Errorf("allows(%q, %q, %q) = %v, want %v", tt.from, tt.to, tt.tool, got, tt.want)
		}
	}
	if _, ok := (DelegationConf{}).allows("pi1", "pi2", "sysinfo"); ok {
		t.Error("no rules allow something")
	}
}

// TestDelegationConfig: [delegation] is checked when the file loads.
func TestDelegationConfig(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
		depth            int
	}{
		{"off by default", "", "", DefaultDelegationMaxDepth},
		{"a rule", "[[delegation.allow]]\nfrom = \"pi1\"\nto = \"pi2\"\ntools = [\"sysinfo\"]\n", "", DefaultDelegationMaxDepth},
		{"max_depth", "[delegation]\nmax_depth = 3\n", "", 3},
		{"negative depth", "[delegation]\nmax_depth = -1\n", "delegation: max_depth = -1, want 1 to 15", 0},
		{"deep", "[delegation]\nmax_depth = 16\n", "delegation: max_depth = 16, want 1 to 15", 0},
		{"unknown field", "[[delegation.allow]]\nfrom = \"pi1\"\nto = \"pi2\"\ntool = [\"x\"]\n", "unknown keys: delegation.allow.tool", 0},
		{"empty from", "[[delegation.allow]]\nto = \"pi2\"\nprompt = true\n", "delegation.allow[0]: from is empty", 0},
		{"empty to", "[[delegation.allow]]\nfrom = \"pi1\"\nprompt = true\n", "delegation.allow[0]: to is empty", 0},
		{"bad pattern", "[[delegation.allow]]\nfrom = \"pi[\"\nto = \"pi2\"\nprompt = true\n", `delegation.allow[0]: from = "pi[" is not a valid pattern`, 0},
		{"bad tool pattern", "[[delegation.allow]]\nfrom = \"pi1\"\nto = \"pi2\"\ntools = [\"ok\", \"\"]\n", "delegation.allow[0]: tools[1] is empty", 0},
		{"a slash", "[[delegation.allow]]\nfrom = \"pi1\"\nto = \"a/b\"\nprompt = true\n", `character '/' can match no agent or tool name`, 0},
		{"nothing allowed", "[[delegation.allow]]\nfrom = \"pi1\"\nto = \"pi2\"\n", "delegation.allow[0]: allows nothing", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := loadConfig(t, t.TempDir(), tt.body, tt.want)
			if ok && c.Delegation.MaxDepth != tt.depth {
				t.Fatalf("max_depth = %d, want %d", c.Delegation.MaxDepth, tt.depth)
			}
		})
	}
}

// fakeAgent is a bare MQTT client posing as agent id on node's broker: it
// lists one tool, passes on the prompts and delegate results it gets,
// and never answers a prompt.
type fakeAgent struct {
	t       *testing.T
	id      string
	c       *mqttc.Client
	prompts chan wire.PromptPayload
	results chan wire.ToolResult
}

func startFakeAgent(t *testing.T, ctx context.Context, node *Node, id string) *fakeAgent {
	t.Helper()
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "fake-" + id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f := &fakeAgent{t: t, id: id, c: c, prompts: make(chan wire.PromptPayload, 4), results: make(chan wire.ToolResult, 64)}
	if err := c.Subscribe(wire.CommandsTopic(id), 1, func(m mqttc.Message) {
		cmd, err := wire.DecodeCommand(m.Payload)
		if err != nil {
			return
		}
		switch cmd.Command {
		case wire.CmdToolsList:
			r, _ := wire.NewReport(id, "", wire.ReportResult, time.Now().Unix(), wire.ToolsList{RequestID: cmd.RequestID,
				Tools: []wire.ToolInfo{{Name: "hello", Description: "says hello", Parameters: map[string]any{"type": "object"}}}})
			b, _ := json.Marshal(r)
			go func() { _ = c.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic(id), Payload: b, QoS: 1}) }()
		case wire.CmdPrompt:
			if p, err := wire.DecodePromptPayload(cmd.Payload); err == nil {
				f.prompts <- p
			}
		case wire.CmdDelegateResult:
			if r, err := wire.DecodeDelegateResult(cmd.Payload); err == nil {
				f.results <- r
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(wire.Status{AgentID: id, Status: wire.PresenceOnline})
	if err := c.Publish(ctx, mqttc.Message{Topic: wire.StatusTopic(id), Payload: st, QoS: 1}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { _, listed := node.agentTools(id); return listed }, id+" listed")
	return f
}

// delegate publishes a delegate request as the fake agent.
func (f *fakeAgent) delegate(ctx context.Context, req wire.DelegateRequest) {
	f.t.Helper()
	r, err := wire.NewReport(f.id, "", wire.ReportDelegate, time.Now().Unix(), req)
	if err != nil {
		f.t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	if err := f.c.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic(f.id), Payload: b, QoS: 1}); err != nil {
		f.t.Fatal(err)
	}
}

// TestDelegationBusyAndClose: an agent gets at most
// maxDelegatedRunningPerAgent calls running at once, the next is answered
// busy at once; a node that closes ends the running ones, each answered
// and audited as interrupted.
func TestDelegationBusyAndClose(t *testing.T) {
	dir := t.TempDir()
	// A broker of its own, which outlives the node: the answers the node
	// sends as it closes reach pi1.
	cfg, _ := loadConfig(t, dir, fmt.Sprintf("data_dir = \"orch\"\n[broker]\nurl = %q\n[[delegation.allow]]\nfrom = \"pi1\"\nto = \"pi2\"\ntools = [\"hang\"]\n",
		mqtttest.StartEmbedded(t)), "")
	node, err := Start(context.Background(), cfg, Options{Provider: mustScript(t, `{"name":"orch","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"edge_call","arguments":{"agent_id":"pi1","query":"hang"}}]},
	  {"content":"done"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	e2e, err := filepath.Abs("../testdata/skills/e2e")
	if err != nil {
		t.Fatal(err)
	}
	skills := filepath.Join(dir, "pi2-skills")
	if err := os.MkdirAll(skills, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e2e, filepath.Join(skills, "e2e")); err != nil {
		t.Fatal(err)
	}
	startSkillAgent(t, node, dir, "pi2", skills, "")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pi1 := startFakeAgent(t, ctx, node, "pi1")
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() { _, _ = node.Chat(cctx, "busy", "hang") }()
	var p wire.PromptPayload
	select {
	case p = <-pi1.prompts:
	case <-ctx.Done():
		t.Fatal("no prompt reached pi1")
	}
	if p.Delegation == nil {
		t.Fatal("no delegation offered")
	}
	markers := filepath.Join(dir, "markers")
	if err := os.MkdirAll(markers, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxDelegatedRunningPerAgent + 1 {
		pi1.delegate(ctx, wire.DelegateRequest{RequestID: fmt.Sprintf("h-%d", i), Token: p.Delegation.Token, AgentID: "pi2", Tool: "hang",
			Parameters: json.RawMessage(fmt.Sprintf(`{"marker":%q}`, filepath.Join(markers, fmt.Sprint(i))))})
	}
	busyID := fmt.Sprintf("h-%d", maxDelegatedRunningPerAgent)
	select {
	case r := <-pi1.results:
		if r.RequestID != busyID || r.ErrorType != wire.ErrBusy {
			t.Fatalf("first answer %+v, want busy for %s", r, busyID)
		}
	case <-ctx.Done():
		t.Fatal("no busy answer")
	}
	testenv.Eventually(t, 20*time.Second, func() bool {
		m, _ := os.ReadDir(markers)
		return len(m) > 0
	}, "a hang started on pi2")
	ccancel()
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	// Each answer was published (and acknowledged by the broker) before
	// Close went on to the broker.
	interrupted := map[string]bool{}
	testenv.Eventually(t, 10*time.Second, func() bool {
		for len(pi1.results) > 0 {
			if r := <-pi1.results; r.ErrorType == wire.ErrInterrupted {
				interrupted[r.RequestID] = true
			}
		}
		return len(interrupted) == maxDelegatedRunningPerAgent
	}, "every running call answered interrupted at close")
	if got := auditRows(t, node.AuditPath(), `SELECT error_type, count(*) FROM tool_calls WHERE conversation_id = 'delegation:pi1' GROUP BY error_type`); got != fmt.Sprintf("[[interrupted %d]]", maxDelegatedRunningPerAgent) {
		t.Fatalf("audited %s", got)
	}
}

// TestDelegateResultEncoding: an answer is a delegate_result command the
// agent decodes; one over the message bound becomes an error that still
// names its request.
func TestDelegateResultEncoding(t *testing.T) {
	var d delegator
	for _, tt := range []struct {
		name      string
		res       wire.ToolResult
		status    string
		errSubstr string
	}{
		{"small", wire.ToolResult{Status: wire.StatusSuccess, Tool: "pi2__sysinfo", Result: "ok", RequestID: "r1"}, wire.StatusSuccess, ""},
		{"too big", wire.ToolResult{Status: wire.StatusSuccess, Tool: "pi2__sysinfo", Result: strings.Repeat("x", wire.MaxMessageBytes), RequestID: "r1"},
			wire.StatusError, "too big to pass on"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := d.encode("r1", tt.res)
			if len(b) > wire.MaxMessageBytes {
				t.Fatalf("%d bytes", len(b))
			}
			cmd, err := wire.DecodeCommand(b)
			if err != nil || cmd.Command != wire.CmdDelegateResult || cmd.RequestID != "r1" {
				t.Fatalf("command %+v, %v", cmd, err)
			}
			res, err := wire.DecodeDelegateResult(cmd.Payload)
			if err != nil || res.RequestID != "r1" || res.Status != tt.status || !strings.Contains(res.Error, tt.errSubstr) {
				t.Fatalf("result %+v, %v", res, err)
			}
		})
	}
}

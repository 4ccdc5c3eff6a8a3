package orchestrator

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/internal/approvals"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// gatedNode is a node with its HTTP API, an in-process edge agent
// "bench-edge" running the shipped bench skill (tool noop), approvals
// gating that tool, and a clock the test moves.
type gatedNode struct {
	node         *Node
	base, token  string
	clock        *testenv.Clock
	dir, dataDir string
}

func startGated(t *testing.T, transcript string, dataDir string) *gatedNode {
	t.Helper()
	dir := t.TempDir()
	if dataDir == "" {
		dataDir = filepath.Join(dir, "orch")
	}
	p := mustScript(t, transcript)
	clock := testenv.NewClock(time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC))
	cfg := Config{DataDir: dataDir, Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}},
		HTTP:      HTTPConf{Listen: "127.0.0.1:0"},
		Approvals: approvals.Config{Rules: []approvals.Rule{{Tools: []string{"*__noop"}}}}}
	node := startNode(t, cfg, Options{Provider: p, now: clock.Now})
	startAgent(t, node, dir, testAgent{})
	b, err := os.ReadFile(filepath.Join(dataDir, HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return &gatedNode{node: node, base: "http://" + node.HTTPAddr(), token: strings.TrimSpace(string(b)), clock: clock, dir: dir, dataDir: dataDir}
}

// chat runs a chat in the background; the result arrives on the channel.
// Progress events of kind approval_wait are collected.
func (g *gatedNode) chat(conv string) (<-chan string, func() []actors.Progress) {
	var (
		mu    sync.Mutex
		waits []actors.Progress
	)
	out := make(chan string, 1)
	go func() {
		ans, err := g.node.Converse(context.Background(), ChatInput{ConversationID: conv, Text: "go",
			Progress: func(p actors.Progress) {
				if p.Kind == actors.ProgressApprovalWait {
					mu.Lock()
					waits = append(waits, p)
					mu.Unlock()
				}
			}})
		if err != nil {
			out <- "ERROR " + err.Error()
			return
		}
		out <- ans.Text
	}()
	return out, func() []actors.Progress {
		mu.Lock()
		defer mu.Unlock()
		return append([]actors.Progress(nil), waits...)
	}
}

// pending waits for exactly one pending approval over the API.
func (g *gatedNode) pending(t *testing.T) persistence.Approval {
	t.Helper()
	var page ApprovalsPage
	testenv.Eventually(t, 10*time.Second, func() bool {
		decodeBody(t, send(t, http.MethodGet, g.base+"/v1/approvals", g.token, nil), &page)
		return len(page.Approvals) == 1
	}, "one pending approval")
	return page.Approvals[0]
}

func (g *gatedNode) decide(t *testing.T, id, verb, by string) int {
	t.Helper()
	resp := send(t, http.MethodPost, g.base+"/v1/approvals/"+id+"/"+verb, g.token, map[string]string{"by": by, "note": "checked"})
	resp.Body.Close()
	return resp.StatusCode
}

func (g *gatedNode) query(t *testing.T, q string) string {
	t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), g.node.AuditPath(), q)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(res.Rows)
}

func answer(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
		return ""
	}
}

const directNoop = `{"name":"gated","turns":[
 {"content":"","tool_calls":[{"id":"c1","name":"bench-edge__noop","arguments":{}}]},
 {"content":"R={{result c1}}"}]}`

// An approved call runs; the wait is a progress event with the approval
// id, and request and decision are in the hash-chained audit.
func TestApprovalApproved(t *testing.T) {
	g := startGated(t, directNoop, "")
	ans, waits := g.chat("ok")
	a := g.pending(t)
	if a.Tool != "bench-edge__noop" || a.AgentID != "bench-edge" || !strings.Contains(a.Reason, "*__noop") {
		t.Fatalf("pending %+v", a)
	}
	// The names the node decides under are not a person's: "denied by
	// restart" would read as the node's own decision.
	for _, by := range []string{"restart", "timeout", " canceled "} {
		if code := g.decide(t, a.ID, "deny", by); code != http.StatusBadRequest {
			t.Fatalf("deny by %q: %d, want 400", by, code)
		}
	}
	if code := g.decide(t, a.ID, "approve", "alice"); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	if code := g.decide(t, a.ID, "deny", "bob"); code != http.StatusConflict {
		t.Fatalf("second decision: %d", code)
	}
	if got := answer(t, ans); strings.Contains(got, "Error") || !strings.HasPrefix(got, "R=") {
		t.Fatalf("answer %q", got)
	}
	if w := waits(); len(w) != 1 || w[0].ApprovalID != a.ID {
		t.Fatalf("approval_wait events %+v", w)
	}
	if got := g.query(t, `SELECT status FROM tool_calls WHERE conversation_id = 'ok'`); got != "[[success]]" {
		t.Fatalf("tool_calls %s", got)
	}
	if got := g.query(t, `SELECT kind, coalesce(json_extract(detail, '$.state'), ''), coalesce(json_extract(detail, '$.by'), '')
		FROM events WHERE kind LIKE 'approval_%' ORDER BY chain_seq`); got != "[[approval_requested  ] [approval_decided approved alice]]" {
		t.Fatalf("events %s", got)
	}
	if _, err := sqlite.VerifyChain(context.Background(), g.node.AuditPath()); err != nil {
		t.Fatal(err)
	}
}

// A denied call is not run; the model reads who denied it.
func TestApprovalDenied(t *testing.T) {
	g := startGated(t, directNoop, "")
	ans, _ := g.chat("no")
	a := g.pending(t)
	if code := g.decide(t, a.ID, "deny", "bob"); code != http.StatusOK {
		t.Fatalf("deny: %d", code)
	}
	got := answer(t, ans)
	if !strings.Contains(got, "Error (approval_denied)") || !strings.Contains(got, "denied by bob") {
		t.Fatalf("answer %q", got)
	}
	if got := g.query(t, `SELECT status, error_type FROM tool_calls WHERE conversation_id = 'no'`); got != "[[error approval_denied]]" {
		t.Fatalf("tool_calls %s", got)
	}
	// docs/AUDIT.md: the row is joined to its approval by request_id.
	if got := g.query(t, `SELECT a.state, a.decided_by FROM tool_calls t JOIN approvals a ON a.request_id = t.request_id
		WHERE t.conversation_id = 'no'`); got != "[[denied bob]]" {
		t.Fatalf("tool_calls joined to approvals by request_id: %s", got)
	}
	if got := g.query(t, `SELECT count(*) FROM tool_calls t JOIN events e ON e.kind = 'approval_decided'
		AND json_extract(e.detail, '$.request_id') = t.request_id WHERE t.conversation_id = 'no'`); got != "[[1]]" {
		t.Fatalf("tool_calls joined to approval_decided by request_id: %s", got)
	}
}

// A chat canceled while its call waits for approval: the wait is decided
// canceled, and the call, never run, still has its tool_calls row, joined
// to the approval by request_id.
func TestApprovalCanceledWithItsChat(t *testing.T) {
	g := startGated(t, directNoop, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := g.node.Converse(ctx, ChatInput{ConversationID: "gone", Text: "go"})
		done <- err
	}()
	g.pending(t)
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the canceled chat did not end")
	}
	const joined = `SELECT a.state, t.status, t.error_type FROM tool_calls t JOIN approvals a ON a.request_id = t.request_id
		WHERE t.conversation_id = 'gone'`
	testenv.Eventually(t, 10*time.Second, func() bool { return g.query(t, joined) != "[]" }, "the unrun call's row")
	if got := g.query(t, joined); got != "[[canceled error approval_denied]]" {
		t.Fatalf("tool_calls joined to approvals: %s", got)
	}
}

// Nobody decides: at the timeout the call is denied, never approved.
func TestApprovalTimesOut(t *testing.T) {
	g := startGated(t, directNoop, "")
	ans, _ := g.chat("late")
	a := g.pending(t)
	g.clock.Add(approvals.DefaultTimeout - time.Second)
	if err := g.node.gate.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := g.pending(t); p.ID != a.ID {
		t.Fatal("swept before its time")
	}
	g.clock.Add(time.Second)
	if err := g.node.gate.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := answer(t, ans); !strings.Contains(got, "approval timed out") {
		t.Fatalf("answer %q", got)
	}
	if got := g.query(t, `SELECT state, decided_by FROM approvals`); got != "[[timed_out timeout]]" {
		t.Fatalf("approvals %s", got)
	}
	if code := g.decide(t, a.ID, "approve", "alice"); code != http.StatusConflict {
		t.Fatalf("approve after the timeout: %d", code)
	}
}

// edge_call cannot go around the gate: a structured action is gated as
// the agent's tool, and a natural-language query to an agent that has a
// gated tool needs approval itself.
func TestApprovalEdgeCall(t *testing.T) {
	for _, tt := range []struct {
		name, args, tool string
	}{
		{"action", `{"agent_id":"bench-edge","action":"noop","params":{}}`, "bench-edge__noop"},
		{"query", `{"agent_id":"bench-edge","query":"run noop for me"}`, "edge_call"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := startGated(t, `{"name":"ec","turns":[
			 {"content":"","tool_calls":[{"id":"c1","name":"edge_call","arguments":`+tt.args+`}]},
			 {"content":"R={{result c1}}"}]}`, "")
			ans, _ := g.chat("ec")
			a := g.pending(t)
			if a.Tool != tt.tool || a.AgentID != "bench-edge" {
				t.Fatalf("pending %+v", a)
			}
			// Gated either way: for the tool it could run, or (while the
			// agent is re-listing its tools, which an emulated board can
			// catch) because its list is not settled.
			if tt.name == "query" && !strings.Contains(a.Reason, "bench-edge__noop") && !strings.Contains(a.Reason, "not listed yet") {
				t.Fatalf("reason %q names neither the gated tool nor an unsettled list", a.Reason)
			}
			if code := g.decide(t, a.ID, "deny", "carol"); code != http.StatusOK {
				t.Fatalf("deny: %d", code)
			}
			if got := answer(t, ans); !strings.Contains(got, "denied by carol") {
				t.Fatalf("answer %q", got)
			}
		})
	}
}

// An approval left pending by a node that died is denied by "restart"
// when the node starts again, and audited; nothing runs it.
func TestApprovalPendingAcrossRestart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "orch")
	st, err := sqlite.Open(filepath.Join(dataDir, AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)
	if err := st.CreateApproval(context.Background(), persistence.Approval{ID: "apr-left", Tool: "bench-edge__noop", AgentID: "bench-edge",
		Reason: "rule", Requested: now, Expires: now.Add(time.Hour), Node: "orchestrator"}, 8); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	g := startGated(t, directNoop, dataDir)
	if got := g.query(t, `SELECT state, decided_by FROM approvals`); got != "[[denied restart]]" {
		t.Fatalf("after restart %s", got)
	}
	if got := g.query(t, `SELECT count(*) FROM events WHERE kind = 'approval_decided' AND json_extract(detail, '$.by') = 'restart'`); got != "[[1]]" {
		t.Fatalf("events %s", got)
	}
	if code := g.decide(t, "apr-left", "approve", "alice"); code != http.StatusConflict {
		t.Fatalf("approve a restart-denied call: %d", code)
	}
}

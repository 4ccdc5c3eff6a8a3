package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

const noopTranscript = `{"name":"bench","turns":[
 {"content":"","tool_calls":[{"id":"c1","name":"bench-edge__noop","arguments":{}}]},
 {"content":"{{result c1}}"}]}`

// queryAudit runs q read-only on node's audit database.
func queryAudit(t *testing.T, node *Node, q string) *sqlite.Result {
	t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), node.AuditPath(), q)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// inProcess starts a node with its embedded broker and an edge agent in
// the same process, running the shipped bench skill's real tool binary.
func inProcess(tb testing.TB, auditSync string) *Node {
	tb.Helper()
	dir := tb.TempDir()
	node := startNode(tb, Config{DataDir: filepath.Join(dir, "orch"), AuditSync: auditSync,
		Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}}, Options{Provider: mustScript(tb, noopTranscript)})
	startAgent(tb, node, dir, testAgent{AuditSync: auditSync})
	return node
}

// BenchmarkRoundTrip measures one chat that makes one tool call:
// conversation → tool-call actor → broker → edge agent → /bin/sh tool →
// back, audited on both sides. Each chat is a new conversation, named by
// the client (its history is read first) or made by the node, as for a
// stateless client (no read: actors.Chat.Fresh).
func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range []string{"normal", "full"} {
		for _, id := range []string{"client", "node"} {
			b.Run("audit_sync="+mode+"/id="+id, func(b *testing.B) {
				node := inProcess(b, mode)
				ctx := context.Background()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					in := ChatInput{ConversationID: fmt.Sprintf("b%d", i), Text: "go"}
					if id == "node" {
						in.ConversationID, in.fresh = newConversationID("b"), true
					}
					ans, err := node.Converse(ctx, in)
					if err != nil || ans.Text != "ok" {
						b.Fatalf("round trip %d: %v %+v", i, err, ans)
					}
				}
			})
		}
	}
}

func TestInProcessRoundTripIsAuditedAndCloseIsIdempotent(t *testing.T) {
	node := inProcess(t, "normal")
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if ans, err := node.Chat(ctx, fmt.Sprintf("c%d", i), "go"); err != nil || ans.Text != "ok" {
			t.Fatalf("chat %d: %v %+v", i, err, ans)
		}
	}
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	if err := node.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	res := queryAudit(t, node, `SELECT count(*) FROM tool_calls WHERE status = 'success' AND agent_id = 'bench-edge'`)
	if fmt.Sprint(res.Rows[0][0]) != "3" {
		t.Fatalf("audited calls %v, want 3", res.Rows)
	}
}

// TestConversationSurvivesRestart closes a node and starts another on the
// same data directory: the conversation goes on from its stored history,
// and every completion is in llm_calls.
func TestConversationSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	p, err := scripted.Parse([]byte(`{"name":"r","turns":[{"content":"first answer"},{"content":"second answer, after {{user}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	start := func() *Node {
		n, err := Start(context.Background(), Config{DataDir: dir, Broker: BrokerConf{Listen: "127.0.0.1:0"}}, Options{Provider: p})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ctx := context.Background()
	n1 := start()
	if ans, err := n1.Chat(ctx, "kept", "hello"); err != nil || ans.Text != "first answer" {
		t.Fatalf("first chat %+v %v", ans, err)
	}
	if err := n1.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := start()
	defer n2.Close()
	// The transcript's second turn is only reached when the first answer
	// is in the history the provider is sent.
	if ans, err := n2.Chat(ctx, "kept", "again"); err != nil || ans.Text != "second answer, after again" {
		t.Fatalf("chat after restart %+v %v", ans, err)
	}
	for q, want := range map[string]string{
		`SELECT count(*) FROM messages WHERE conversation_id = 'kept'`:                                                "4",
		`SELECT count(*) FROM llm_calls WHERE conversation_id = 'kept' AND status = 'success'`:                        "2",
		`SELECT group_concat(role, ',') FROM (SELECT role FROM messages WHERE conversation_id = 'kept' ORDER BY seq)`: "user,assistant,user,assistant",
	} {
		res, err := sqlite.QueryReadOnly(ctx, n2.AuditPath(), q)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(res.Rows[0][0]); got != want {
			t.Fatalf("%s = %s, want %s", q, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string // substring of the error; "" = valid
	}{
		{"empty is valid", ``, ""},
		{"unknown key", "node_idd = \"x\"\n", "unknown keys: node_idd"},
		{"bad node id", "node_id = \"a/b\"\n", "node_id"},
		{"bad sync", "audit_sync = \"sometimes\"\n", "audit_sync"},
		{"bad provider", "[llm]\nprovider = \"gpt\"\n", "llm.provider"},
		{"bad duration", "[loop]\nchat_timeout = \"soon\"\n", "duration"},
		{"bad on_limit", "[loop]\non_limit = \"shrug\"\n", "loop.on_limit"},
		{"bad tools mode", "[loop]\ntools = \"some\"\n", "loop.tools"},
		{"unknown timeout category", "[loop.timeouts.gpio]\ndefault = \"1s\"\n", "loop.timeouts.gpio: unknown category"},
		{"default over max", "[loop.timeouts.exec]\ndefault = \"10m\"\nmax = \"1m\"\n", "loop.timeouts.exec"},
		{"negative limit", "[loop]\ntool_error_limit = -1\n", "loop.tool_error_limit"},
		{"negative dormant memory", "[loop]\ndormant_memory_mb = -1\n", "loop.dormant_memory_mb"},
		{"dormant memory past an int32", "[loop]\ndormant_memory_mb = 4096\n", "loop.dormant_memory_mb: 4096 is more than 1024"},
		{"negative dormant_after", "[loop]\ndormant_after = \"-1s\"\n", "loop.dormant_after"},
		{"dormancy off", "[loop]\ndormant_after = \"10m\"\ndormant_memory_mb = 1024\n", ""},
		{"password env without url", "[broker]\npassword_env = \"EVOCLAW_TEST_SURELY_UNSET\"\n", "are for an external broker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := loadConfig(t, t.TempDir(), tt.toml, tt.want)
			if ok && (c.Broker.Listen != DefaultBrokerListen || c.AuditSync != "normal" || c.DataDir != DefaultDataDir) {
				t.Fatalf("defaults not filled: %+v", c)
			}
		})
	}
}

func TestLoopConfigDecodes(t *testing.T) {
	conf := `[loop]
max_tool_iterations = 4
tool_error_limit = 2
max_identical_calls = 2
on_limit = "error"
tools = "compact"
dormant_after = "30s"
dormant_memory_mb = 8
[loop.select]
pi-kitchen = ["sysinfo"]
[loop.timeouts.exec]
default = "2m"
max = "20m"
`
	c, _ := loadConfig(t, t.TempDir(), conf, "")
	l := c.Loop
	if l.MaxToolIterations != 4 || l.ToolErrorLimit != 2 || l.MaxIdenticalCalls != 2 || l.OnLimit != "error" || l.Tools != "compact" ||
		len(l.Select["pi-kitchen"]) != 1 || l.Timeouts["exec"].Default.Duration != 2*time.Minute || l.Timeouts["exec"].Max.Duration != 20*time.Minute ||
		l.DormantAfter.Duration != 30*time.Second || l.DormantMemoryMB != 8 {
		t.Fatalf("loop config %+v", l)
	}
}

func TestAuditConfigDecodes(t *testing.T) {
	conf := "[audit]\nhot_capacity = 500\nretention_interval = \"30m\"\n[audit.retention]\nwarm_window = \"72h\"\nmax_age = \"720h\"\nmax_bytes = 1000000\n[audit.cold]\nurl = \"http://127.0.0.1:8081\"\n"
	c, _ := loadConfig(t, t.TempDir(), conf, "")
	a := c.Audit
	if a.HotCapacity != 500 || a.RetentionInterval != 30*time.Minute || a.Retention.WarmWindow != 72*time.Hour ||
		a.Retention.MaxAge != 720*time.Hour || a.Retention.MaxBytes != 1000000 || a.Cold.URL != "http://127.0.0.1:8081" {
		t.Fatalf("audit config %+v", a)
	}
}

func TestExposedBrokerIsRefused(t *testing.T) {
	_, err := Start(context.Background(), Config{DataDir: t.TempDir(), Broker: BrokerConf{Listen: "0.0.0.0:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "refusing to allow anonymous clients") {
		t.Fatalf("err = %v", err)
	}
}

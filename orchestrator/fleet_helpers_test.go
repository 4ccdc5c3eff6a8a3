package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

// startNode starts a node with cfg and o; it is closed when the test ends.
func startNode(tb testing.TB, cfg Config, o Options) *Node {
	tb.Helper()
	if cfg.Broker.URL == "" && (cfg.Broker.Listen == "" || cfg.Broker.Listen == DefaultBrokerListen) {
		// A user's node, or another test's, may hold the default port.
		tb.Fatalf("a test node on the default broker address %s: set [broker] listen = \"127.0.0.1:0\"", DefaultBrokerListen)
	}
	node, err := Start(context.Background(), cfg, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { node.Close() })
	return node
}

// testAgent says which in-process edge agent startAgent runs. The zero
// value is the anonymous agent "bench-edge" with the shipped bench skill.
type testAgent struct {
	ID          string   // agent id; "" means "bench-edge"
	Skill       string   // shipped skill installed for it; "" means "bench"
	Permissions []string // granted to its skills; nil grants none
	AuditSync   string   // its audit sync mode; "" is the default
	// Username and Password, when set, are the broker credentials it joins
	// with (the password passes through an environment variable, as
	// `evoclaw agents add` would have it).
	Username, Password string
	// Wait bounds the wait for it to join, and again for its tools to be
	// listed; 0 means 10s.
	Wait time.Duration
}

// startAgent installs the agent's shipped skill under dir/skills and runs
// the agent in this process against node, with its data in dir/edge, until
// the test ends. It returns once the node has the agent and its tool list.
func startAgent(tb testing.TB, node *Node, dir string, ta testAgent) {
	tb.Helper()
	if ta.ID == "" {
		ta.ID = "bench-edge"
	}
	if ta.Skill == "" {
		ta.Skill = "bench"
	}
	if ta.Wait == 0 {
		ta.Wait = 10 * time.Second
	}
	skills := filepath.Join(dir, "skills")
	if _, err := shipped.Install(ta.Skill, skills); err != nil {
		tb.Fatal(err)
	}
	mq := edge.MQTTConf{Broker: node.BrokerURL(), Username: ta.Username}
	if ta.Password != "" {
		tb.Setenv("EVOCLAW_TEST_AGENT_PASSWORD", ta.Password)
		mq.PasswordEnv = "EVOCLAW_TEST_AGENT_PASSWORD"
	}
	a, err := edge.New(edge.Config{AgentID: ta.ID, DataDir: filepath.Join(dir, "edge"), AuditSync: ta.AuditSync, MQTT: mq,
		Skills: edge.SkillConf{Dirs: []string{skills}, Permissions: ta.Permissions}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	runAgent(tb, a)
	wctx, wcancel := context.WithTimeout(context.Background(), ta.Wait)
	defer wcancel()
	if err := node.WaitForAgents(wctx, 1); err != nil {
		tb.Fatal(err)
	}
	// The gate treats an agent re-listing its tools as unlisted (a new
	// list may hold a gated tool): wait until the list has settled, which
	// a slow machine (an emulated ARM board) may take a while to see.
	testenv.Eventually(tb, ta.Wait, func() bool {
		_, listed := node.agentTools(ta.ID)
		return listed
	}, ta.ID+"'s tools listed")
}

// runAgent runs a until the test ends; an error from its Run fails the
// test.
func runAgent(tb testing.TB, a *edge.Agent) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	})
}

// startBuiltins starts a node from an evoclaw.toml granting file_read and
// giving the orchestrator's own built-in tools a workspace that holds
// notes.txt; builtin adds lines to the [builtin] table. It returns the
// node, the workspace and a context that ends after 20s.
func startBuiltins(t *testing.T, builtin, transcript string) (*Node, string, context.Context) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the pump runs at night\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := loadConfig(t, dir, fmt.Sprintf("data_dir = \"data\"\n[broker]\nlisten = \"127.0.0.1:0\"\n[skills]\npermissions = [\"file_read\"]\n"+
		"[builtin]\nworkspace = %q\n%s\n", ws, builtin), "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return startNode(t, cfg, Options{Provider: mustScript(t, transcript)}), ws, ctx
}

// addAgentUser adds the broker user of agent id to cfg's users file, as
// `evoclaw agents add` does, and returns its password.
func addAgentUser(tb testing.TB, cfg Config, id string) string {
	tb.Helper()
	pw, err := broker.AddUser(cfg.UsersFilePath(), id, broker.RoleAgent, 4, false)
	if err != nil {
		tb.Fatal(err)
	}
	return pw
}

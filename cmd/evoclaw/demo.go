package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/orchestrator/chaos/child"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

// demoAgent is one edge agent of the demo fleet.
type demoAgent struct {
	id, caps    string
	permissions []string
}

var demoFleet = []demoAgent{
	{id: "pi-kitchen", caps: "Raspberry Pi in the kitchen — host health and disk usage", permissions: []string{"file_read"}},
	{id: "pi-garage", caps: "Raspberry Pi in the garage — host health only (no file-system permission)"},
}

const demoQuestion = "How are my Raspberry Pis doing?"

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	dataDir := fs.String("data-dir", "evoclaw-demo", "directory for the demo's data (kept afterwards)")
	if err := parseNoArgs(fs, args, "demo"); err != nil {
		return err
	}
	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	provider, err := scripted.Builtin("demo")
	if err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	say("evoclaw demo: the whole system on this machine, offline")
	say("  data directory: %s", dir)
	say("  LLM provider:   %s", provider.Name())

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	release, err := claimDemoDir(dir)
	if err != nil {
		return err
	}
	defer release()
	// The agents' processes inherit it.
	if err := useDataTempDir(dir); err != nil {
		return err
	}
	skillsDir := filepath.Join(dir, "skills")
	if _, err := shipped.Install("demo", skillsDir); err != nil {
		return err
	}
	nodeLog, err := os.OpenFile(filepath.Join(dir, "orchestrator.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer nodeLog.Close()

	cfg := orchestrator.Config{DataDir: dir, Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"}}
	// Every run gives each agent a fresh password, as `evoclaw agents add`
	// would: the demo runs the same access control as a real fleet.
	passwords := map[string]string{}
	for _, a := range demoFleet {
		if passwords[a.id], err = broker.AddUser(cfg.UsersFilePath(), a.id, broker.RoleAgent, 0, true); err != nil {
			return err
		}
	}
	node, err := orchestrator.Start(ctx, cfg, orchestrator.Options{Provider: provider, Logger: logger(nodeLog, slog.LevelInfo)})
	if err != nil {
		return err
	}
	defer node.Close()
	say("[1/5] embedded MQTT broker listening at %s (loopback only, per-agent passwords and topic ACL); orchestrator connected", node.BrokerURL())

	say("[2/5] starting %d edge agents as separate processes (`evoclaw edge`)", len(demoFleet))
	var kids []*child.Process
	defer func() {
		for _, k := range kids {
			_ = k.Stop()
		}
	}()
	for _, a := range demoFleet {
		k, err := startDemoAgent(a, dir, skillsDir, node.BrokerURL(), passwords[a.id])
		if err != nil {
			return err
		}
		kids = append(kids, k)
	}
	for _, k := range kids {
		if _, err := k.WaitReady(ctx); err != nil {
			return fmt.Errorf("%w (see %s)", err, filepath.Join(dir, "agents", k.Name, "edge.log"))
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	err = node.WaitForAgents(wctx, len(demoFleet))
	wcancel()
	if err != nil {
		return err
	}
	pids := map[string]int{}
	for _, k := range kids {
		pids[k.Name] = k.Pid()
	}
	for _, a := range node.Catalog().Online() {
		var tools []string
		for _, t := range a.Tools {
			tools = append(tools, t.Name)
		}
		say("      %-10s pid %-7d online, tools %v: %q", a.ID, pids[a.ID], tools, a.Capabilities)
	}

	conv := "demo-" + time.Now().UTC().Format("20060102T150405")
	say("[3/5] conversation %s, user: %q", conv, demoQuestion)
	ans, err := node.Chat(ctx, conv, demoQuestion)
	if err != nil {
		return err
	}
	say("[4/5] answer after %d tool-calling turns and %d tool calls over MQTT:", ans.Iterations, ans.ToolCalls)
	for _, line := range strings.Split(ans.Text, "\n") {
		say("      %s", line)
	}
	m := node.Metrics()
	say("      tool loop: %d calls (%d ok, %d failed, %d timed out), %d parallel batches, peak %d at once, %d ms saved by running them in parallel",
		m.Calls, m.Successes, m.Errors, m.Timeouts, m.ParallelBatches, m.MaxConcurrency, m.WallTimeSavedMs)

	say("[5/5] audit trail of this conversation, by SQL on %s:", node.AuditPath())
	q := fmt.Sprintf(`SELECT ts, side, agent_id, tool, status, elapsed_ms, request_id FROM tool_calls WHERE conversation_id = '%s' ORDER BY id`, conv)
	if err := printQuery(ctx, stdout, node.AuditPath(), q); err != nil {
		return err
	}
	say("      and as each edge agent recorded it in its own database:")
	eq := fmt.Sprintf(`SELECT node, tool, status, exit_code, elapsed_ms, request_id FROM tool_calls WHERE conversation_id = '%s' ORDER BY id`, conv)
	for _, a := range demoFleet {
		if err := printQuery(ctx, stdout, filepath.Join(dir, "agents", a.id, "audit.db"), eq); err != nil {
			return err
		}
	}
	say("done in %s. Query the trail yourself:", time.Since(began).Round(time.Millisecond))
	say("  evoclaw audit sql --data-dir %s \"SELECT tool, status, elapsed_ms, result_excerpt FROM tool_calls\"", *dataDir)
	say("  sqlite3 %s \"SELECT * FROM tool_calls\"", filepath.Join(*dataDir, orchestrator.AuditFile))
	return nil
}

// demoPasswordEnv carries a demo agent's password to its process.
const demoPasswordEnv = "EVOCLAW_MQTT_PASSWORD"

func startDemoAgent(a demoAgent, dir, skillsDir, brokerURL, password string) (*child.Process, error) {
	agentDir := filepath.Join(dir, "agents", a.id)
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		return nil, err
	}
	perms := make([]string, len(a.permissions))
	for i, p := range a.permissions {
		perms[i] = fmt.Sprintf("%q", p)
	}
	toml := fmt.Sprintf(`# Written by evoclaw demo.
agent_id = %q
agent_type = "monitor"
capabilities = %q
data_dir = "."

[mqtt]
broker = %q
username = %q
password_env = %q

[skills]
dirs = [%q]
permissions = [%s]
`, a.id, a.caps, brokerURL, a.id, demoPasswordEnv, skillsDir, strings.Join(perms, ", "))
	conf := filepath.Join(agentDir, "agent.toml")
	if err := os.WriteFile(conf, []byte(toml), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(agentDir, "edge.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	// The child holds its own descriptor; ours can go.
	defer logf.Close()
	return startChild(a.id, []string{"edge", "--config", conf}, logf, demoPasswordEnv+"="+password)
}

func printQuery(ctx context.Context, w io.Writer, db, q string) error {
	res, err := sqlite.QueryReadOnly(ctx, db, q)
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		fmt.Fprintf(w, "      %s\n", line)
	}
	return nil
}

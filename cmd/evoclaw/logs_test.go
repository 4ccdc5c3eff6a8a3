package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

func TestLogsCommand(t *testing.T) {
	dir := auditDir(t, 3)
	code, out, errOut := runArgs("logs", "--data-dir", dir, "--filter=tool", "--agent", "edge-1", "--limit", "2")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "tool    node=n1 agent=edge-1 shell success") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runArgs("logs", "--data-dir", dir, "--agent", "other"); code != 0 || out != "" {
		t.Fatalf("other agent: exit %d %q", code, out)
	}
	if code, _, _ := runArgs("logs", "--data-dir", dir, "--filter=bogus"); code != 2 {
		t.Fatalf("bad filter: exit %d", code)
	}
	if code, _, errOut := runArgs("logs", "--data-dir", t.TempDir()); code != 1 || !strings.Contains(errOut, "no database file") {
		t.Fatalf("missing db: exit %d %s", code, errOut)
	}
}

// --follow prints records committed by a running store after it started,
// and returns when interrupted.
func TestLogsFollow(t *testing.T) {
	dir := auditDir(t, 1)
	s, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testenv.Buffer
	done := make(chan error, 1)
	go func() { done <- cmdLogs(ctx, []string{"--data-dir", dir, "--follow", "--poll", "10ms"}, &out, &errOut) }()

	waitLines := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for strings.Count(out.String(), "\n") < n {
			if time.Now().After(deadline) {
				t.Fatalf("want %d lines, have:\n%s%s", n, out.String(), errOut.String())
			}
			time.Sleep(5 * time.Millisecond) // poll interval
		}
	}
	waitLines(1)
	if err := s.RecordEvent(ctx, persistence.Event{Node: "n1", AgentID: "edge-2", Kind: persistence.EventAgentOffline}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLLMCall(ctx, persistence.LLMCall{Node: "n1", Provider: "scripted", Model: "m", Status: persistence.StatusSuccess, InputTokens: 7}); err != nil {
		t.Fatal(err)
	}
	waitLines(3)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(lines[1], "event   node=n1 agent=edge-2 agent_offline") || !strings.Contains(lines[2], "llm     node=n1 scripted/m success") || !strings.Contains(lines[2], "in=7") {
		t.Fatalf("followed lines:\n%s", out.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("logs --follow returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("logs --follow did not stop when interrupted")
	}
}

func TestMetricsAndReportCommands(t *testing.T) {
	dir := auditDir(t, 4) // 4 shell calls by edge-1, elapsed 0..3 ms
	code, out, errOut := runArgs("metrics", "--tools", "--data-dir", dir, "--csv")
	if code != 0 || !strings.Contains(out, "tool,agent,calls,errors,error_pct,avg_ms,max_ms\n") || !strings.Contains(out, "shell,edge-1,4,0,0,1.5,3\n") {
		t.Fatalf("metrics: exit %d\n%s%s", code, out, errOut)
	}
	for _, bad := range [][]string{
		{"metrics", "--data-dir", dir},                                // no family
		{"metrics", "--tools", "--data-dir", dir, "--json", "--csv"},  // two formats
		{"metrics", "--tools", "--data-dir", dir, "--timeout", "-1s"}, // a negative limit
		{"metrics", "--tools", "--data-dir", dir, "--tier", "cold"},   // the warm tier only
	} {
		if code, out, errOut := runArgs(bad...); code != 2 {
			t.Fatalf("%v: exit %d, want 2 (usage)\n%s%s", bad, code, out, errOut)
		}
	}
	code, out, errOut = runArgs("metrics", "--tools", "--data-dir", dir, "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0]["tool"] != "shell" || rows[0]["calls"] != 4.0 {
		t.Fatalf("metrics --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	code, out, errOut = runArgs("metrics", "--tools", "--data-dir", dir)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) < 2 || !strings.Contains(lines[0], "error_pct") || !strings.Contains(out, "edge-1") {
		t.Fatalf("metrics table: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runArgs("audit", "report", "list")
	if code != 0 || !strings.Contains(out, "conversation CONVERSATION_ID") {
		t.Fatalf("report list: %d %s", code, out)
	}
	code, out, errOut = runArgs("audit", "report", "slowest", "--data-dir", dir, "--csv")
	if code != 0 || strings.Count(out, "\n") != 5 || !strings.Contains(strings.Split(out, "\n")[1], ",shell,edge-1,3,success,") {
		t.Fatalf("report slowest: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runArgs("audit", "report", "conversation", "--data-dir", dir); code != 2 {
		t.Fatalf("conversation report without its id: exit %d", code)
	}
	if code, out, _ := runArgs("audit", "report", "conversation", "nope", "--data-dir", dir, "--csv"); code != 0 || out != "ts,kind,name,detail,chain_seq\n" {
		t.Fatalf("conversation report of an unknown id: exit %d %q", code, out)
	}
	if code, _, _ := runArgs("audit", "report", "bogus", "--data-dir", dir); code != 2 {
		t.Fatalf("unknown report: exit %d", code)
	}
}

func TestLogsFromARunningNode(t *testing.T) {
	p, err := scripted.Parse([]byte(`{"name":"l","turns":[{"content":"live answer"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	node, err := orchestrator.Start(context.Background(), orchestrator.Config{DataDir: dir, Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"},
		HTTP: orchestrator.HTTPConf{Listen: "127.0.0.1:0"}}, orchestrator.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if _, err := node.Chat(context.Background(), "live", "hi"); err != nil {
		t.Fatal(err)
	}
	base := "http://" + node.HTTPAddr()
	code, out, errOut := runArgs("logs", "--node", base, "--data-dir", dir, "--filter=message")
	if code != 0 || strings.Count(out, "message") != 2 || !strings.Contains(out, "conv=live") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("EVOCLAW_HTTP_TOKEN", "not-the-token-at-all")
	if code, _, errOut := runArgs("logs", "--node", base, "--data-dir", dir); code == 0 || !strings.Contains(errOut, "wrong token") {
		t.Fatalf("wrong token: exit %d %s", code, errOut)
	}
	// --token-file and $EVOCLAW_TOKEN find the token as for status and chat.
	t.Setenv("EVOCLAW_HTTP_TOKEN", "")
	other := t.TempDir()
	code, out, errOut = runArgs("logs", "--node", base, "--data-dir", other, "--token-file", filepath.Join(dir, orchestrator.HTTPTokenFile), "--filter=message")
	if code != 0 || strings.Count(out, "message") != 2 {
		t.Fatalf("--token-file: exit %d\n%s%s", code, out, errOut)
	}
	tok, err := os.ReadFile(filepath.Join(dir, orchestrator.HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVOCLAW_TOKEN", strings.TrimSpace(string(tok)))
	if code, out, errOut := runArgs("logs", "--node", base, "--data-dir", other, "--filter=message"); code != 0 || strings.Count(out, "message") != 2 {
		t.Fatalf("$EVOCLAW_TOKEN: exit %d\n%s%s", code, out, errOut)
	}
}

func TestLogsFromAnUnreachableNode(t *testing.T) {
	t.Setenv("EVOCLAW_HTTP_TOKEN", "any-token-of-enough-length")
	code, _, errOut := runArgs("logs", "--node", "http://127.0.0.1:1", "--data-dir", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "logs --node") {
		t.Fatalf("exit %d, stderr %q: want a clear error", code, errOut)
	}
	t.Setenv("EVOCLAW_HTTP_TOKEN", "")
	code, _, errOut = runArgs("logs", "--node", "http://127.0.0.1:1", "--data-dir", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "no API token in") || !strings.Contains(errOut, "--token-file") {
		t.Fatalf("exit %d, stderr %q: want the missing token named", code, errOut)
	}
}

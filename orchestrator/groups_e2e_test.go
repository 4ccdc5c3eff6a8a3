package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// markScript is a tool that appends its note (unique per call) to its
// agent's marks file first (the call's side effect), then works for a
// while and answers with the note: a line in a file is a run, and the
// tool_calls row that quotes the note says where the orchestrator thinks
// it ran.
const markScript = `#!/bin/sh
while [ $# -gt 1 ]; do
  case "$1" in --note) note=$2 ;; esac
  shift 2
done
echo "$note" >> %q
sleep 0.4
echo "mark $note"
`

// markSkill writes a skill whose one tool, mark, runs markScript against
// marks, and returns its directory.
func markSkill(t *testing.T, marks string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "mark"), []byte(fmt.Sprintf(markScript, marks)), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := `[skill]
name = "mark"
version = "1.0.0"
description = "leaves a mark"

[[tools]]
name = "mark"
binary = "bin/mark"
description = "leaves a mark and says which"
timeout_ms = 20000
[tools.parameters.properties.note]
type = "string"
description = "ignored"
`
	if err := os.WriteFile(filepath.Join(dir, "skill.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGroupFailoverRealAgents runs a stream of group calls over three
// real agent processes and the embedded broker. One member is stopped
// (SIGSTOP) so the calls sent to it stay unstarted, then SIGKILLed: those
// calls move to other members. Another is SIGKILLed while its calls run:
// those end agent_offline, as calls to a lost agent always did. Every call
// is answered and audited once, on the agent the side effect shows it ran
// on, and no call runs twice.
func TestGroupFailoverRealAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three agent processes")
	}
	t.Run("embedded broker", func(t *testing.T) {
		groupFailover(t, "[broker]\nlisten = \"127.0.0.1:0\"\nallow_anonymous = true\n")
	})
	t.Run("mosquitto", func(t *testing.T) {
		url, _, _ := mqtttest.StartMosquitto(t)
		groupFailover(t, fmt.Sprintf("[broker]\nurl = %q\n", url))
	})
}

// groupFailover runs TestGroupFailoverRealAgents with broker, the node's
// [broker] table.
func groupFailover(t *testing.T, broker string) {
	const calls, parallel = 24, 4
	dir := t.TempDir()
	// Each chat's message is its note: the model passes it on.
	transcript := `{"name": "group", "text_tool_calls": true, "turns": [
 {"content": "<tool_call>{\"name\": \"sensors__mark\", \"arguments\": {\"note\": \"{{user}}\"}}</tool_call>", "expect_tools": ["sensors__mark"]},
 {"content": "{{last_result}}"}]}`
	cfg, _ := loadConfig(t, dir, "data_dir = \"data\"\n"+broker+"[[groups]]\nname = \"sensors\"\nmembers = [\"gpi-*\"]\n", "")
	node := startNode(t, cfg, Options{Provider: mustScript(t, transcript)})

	ids := []string{"gpi-1", "gpi-2", "gpi-3"}
	marks := map[string]string{}
	agents := map[string]*evoclawtest.Edge{}
	for _, id := range ids {
		marks[id] = filepath.Join(dir, id+".marks")
		agents[id] = evoclawtest.StartEdge(t, evoclawtest.EdgeSpec{ID: id, BrokerURL: node.BrokerURL(),
			SkillDirs: []string{markSkill(t, marks[id])}})
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		for _, g := range node.Status().Groups {
			if g.Name == "sensors" && len(g.Online) == 3 && strings.Join(g.Tools, ",") == "mark" {
				return true
			}
		}
		return false
	}, "group sensors with three members offering mark")
	// Each member must be eligible on its own before gpi-2 is stopped: the
	// group's tools above are those of any member, and a member whose
	// tools_list answer has not arrived yet is never picked (stopped
	// before it answers, gpi-2 would never get a call). Its online status
	// (which may come after its first report) says it speaks the start
	// gate.
	for _, id := range ids {
		testenv.Eventually(t, 30*time.Second, func() bool {
			a := node.Catalog().Agents[id]
			if !a.Callable() || !a.StartGate {
				return false
			}
			for _, tool := range a.Tools {
				if tool.Name == "mark" {
					return true
				}
			}
			return false
		}, id+" callable, announcing the start gate and offering mark")
	}

	// gpi-2 stops reading: what it is sent stays unstarted.
	if err := syscall.Kill(agents["gpi-2"].Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type answer struct {
		text string
		err  error
	}
	answers := make([]answer, calls)
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ans, err := node.Chat(ctx, fmt.Sprintf("g%02d", i), fmt.Sprintf("note-%02d", i))
				if err == nil && ans.Err != nil {
					err = ans.Err
				}
				if ans != nil {
					answers[i].text = ans.Text
				}
				answers[i].err = err
			}
		}()
	}
	killed := map[string]bool{}
	for i := range calls {
		next <- i
		switch {
		case i == 4:
			// Some calls wait on the stopped gpi-2: kill it.
			testenv.Eventually(t, 30*time.Second, func() bool { return node.edges.InFlight("gpi-2") >= 1 }, "a call waiting on gpi-2")
			agents["gpi-2"].Kill()
			killed["gpi-2"] = true
		case i == 12:
			// gpi-3 dies while it runs calls.
			testenv.Eventually(t, 30*time.Second, func() bool { return node.edges.InFlight("gpi-3") >= 1 }, "a call running on gpi-3")
			agents["gpi-3"].Kill()
			killed["gpi-3"] = true
		}
	}
	close(next)
	wg.Wait()
	for i, a := range answers {
		if a.err != nil {
			t.Errorf("chat %d: %v", i, a.err)
		}
	}

	// What each agent's side effect says ran there.
	ranOn := map[string]string{}
	for _, id := range ids {
		b, err := os.ReadFile(marks[id])
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, note := range strings.Fields(string(b)) {
			if other, twice := ranOn[note]; twice {
				t.Errorf("call %s ran twice: on %s and on %s", note, other, id)
			}
			ranOn[note] = id
		}
	}

	rows, err := sqlite.QueryReadOnly(ctx, node.AuditPath(), `SELECT request_id, agent_id, status, error_type, result_excerpt
		FROM tool_calls WHERE side = 'orchestrator' AND tool = 'sensors__mark' ORDER BY request_id`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Rows) != calls {
		t.Fatalf("%d audited calls, want %d (one per chat)", len(rows.Rows), calls)
	}
	succeeded, offline := 0, 0
	audited := map[string]bool{}
	for _, r := range rows.Rows {
		reqID, agent, status, etype, excerpt := fmt.Sprint(r[0]), fmt.Sprint(r[1]), fmt.Sprint(r[2]), fmt.Sprint(r[3]), fmt.Sprint(r[4])
		if audited[reqID] {
			t.Errorf("request %s audited twice", reqID)
		}
		audited[reqID] = true
		switch status {
		case "success":
			succeeded++
			note := strings.TrimSpace(strings.TrimPrefix(excerpt, "mark "))
			if ranOn[note] != agent {
				t.Errorf("request %s audited on %s, but its mark %q is on %q", reqID, agent, note, ranOn[note])
			}
		default:
			// Only a call that started on an agent that then died ends
			// without a result.
			if !killed[agent] || (etype != string(wire.ErrAgentOffline) && etype != string(wire.ErrInterrupted)) {
				t.Errorf("request %s on %s: %s %s", reqID, agent, status, etype)
			}
			offline++
		}
	}
	for i, a := range answers {
		note := fmt.Sprintf("note-%02d", i)
		if strings.Contains(a.text, "mark "+note) && ranOn[note] == "" {
			t.Errorf("chat %d answered %q, but no agent ran it", i, a.text)
		}
	}
	if succeeded+offline != calls || succeeded < calls-parallel*2 {
		t.Errorf("%d succeeded, %d ended offline, of %d", succeeded, offline, calls)
	}

	// Each agent's own audit: a request ran (not not_started) on one
	// agent at most.
	ranReq := map[string]string{}
	notStarted := 0
	for _, id := range ids {
		res, err := sqlite.QueryReadOnly(ctx, agents[id].AuditDB, `SELECT request_id, COALESCE(error_type, '') FROM tool_calls WHERE tool = 'mark'`)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			reqID, etype := fmt.Sprint(r[0]), fmt.Sprint(r[1])
			if etype == string(wire.ErrNotStarted) {
				notStarted++
				continue
			}
			if other, twice := ranReq[reqID]; twice {
				t.Errorf("request %s ran on %s and %s", reqID, other, id)
			}
			ranReq[reqID] = id
		}
	}

	// The calls that waited on gpi-2 moved, and the audit says so.
	var moved [][]any
	testenv.Eventually(t, 10*time.Second, func() bool {
		res, err := sqlite.QueryReadOnly(ctx, node.AuditPath(), `SELECT agent_id, detail FROM events WHERE kind = ?`, actors.EventCallMoved)
		if err != nil {
			t.Fatal(err)
		}
		moved = res.Rows
		return len(moved) > 0
	}, "a call_moved event")
	for _, m := range moved {
		var d struct {
			RequestID string `json:"request_id"`
			From      string `json:"from"`
			To        string `json:"to"`
			First     string `json:"first"`
			Group     string `json:"group"`
		}
		if err := json.Unmarshal([]byte(fmt.Sprint(m[1])), &d); err != nil {
			t.Fatal(err)
		}
		if d.Group != "sensors" || d.From != fmt.Sprint(m[0]) || !killed[d.First] || d.To == d.From || !audited[d.RequestID] {
			t.Errorf("call_moved %v", m)
		}
	}
	t.Logf("%d calls: %d succeeded, %d ended offline, %d moves, %d not_started rows on agents", calls, succeeded, offline, len(moved), notStarted)
}

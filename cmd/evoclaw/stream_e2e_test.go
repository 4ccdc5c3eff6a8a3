package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// progressRecorder records the Progress events of chats.
type progressRecorder = testenv.Recorded[actors.Progress]

// bashTranscript makes the model call the bash tool of agent with command
// once per chat, then answer with the result.
func bashTranscript(agent, command string, chats int) string {
	var turns []string
	for i := range chats {
		turns = append(turns,
			fmt.Sprintf(`{"content":"","tool_calls":[{"id":"c%d","name":"%s__bash","arguments":{"command":%q,"timeout_ms":60000}}]}`, i, agent, command),
			fmt.Sprintf(`{"content":"{{result c%d}}"}`, i))
	}
	return `{"name":"stream","turns":[` + strings.Join(turns, ",") + `]}`
}

// startBashEdge runs `evoclaw edge` with the built-in coding tools.
func startBashEdge(t *testing.T, id, brokerURL string) (edgeDB string, pid int) {
	t.Helper()
	cmd := startEdgeWith(t, id, brokerURL, fmt.Sprintf("permissions = [\"shell\"]\n[builtin]\ngroups = [\"coding\"]\nworkspace = %q\n", t.TempDir()))
	return filepath.Join(filepath.Dir(cmd.cmd.Args[3]), "data", "audit.db"), cmd.cmd.Process.Pid
}

// TestToolOutputStreamsOverRealBrokers runs a slow tool on a real edge
// process over the embedded broker and mosquitto: a watching chat sees its
// output as tool_output events, in order, before tool_end, and the result
// and both audit rows are those of the same call unwatched.
func TestToolOutputStreamsOverRealBrokers(t *testing.T) {
	const slow = `for i in 1 2 3 4 5 6 7 8 9 10; do echo "step $i"; sleep 0.3; done`
	const want = "step 1\nstep 2\nstep 3\nstep 4\nstep 5\nstep 6\nstep 7\nstep 8\nstep 9\nstep 10\n"
	for _, b := range mqtttest.Brokers(t) {
		t.Run(b.Name, func(t *testing.T) {
			node := startNode(t, b.URL, bashTranscript("edge-s", slow, 2))
			edgeDB, _ := startBashEdge(t, "edge-s", b.URL)
			ctx := nodeWithAgent(t, node, 60*time.Second)
			var events progressRecorder
			watched, err := node.Converse(ctx, orchestrator.ChatInput{ConversationID: "watched", Text: "run it", Progress: events.Add})
			if err != nil {
				t.Fatal(err)
			}
			plain, err := node.Converse(ctx, orchestrator.ChatInput{ConversationID: "plain", Text: "run it"})
			if err != nil {
				t.Fatal(err)
			}
			if watched.Text != strings.TrimSpace(want) || plain.Text != watched.Text {
				t.Fatalf("answers %q and %q, want %q", watched.Text, plain.Text, want)
			}

			var kinds []string
			var streamed strings.Builder
			var lastSeq int64
			outputs := 0
			for _, e := range events.All() {
				kinds = append(kinds, e.Kind)
				if e.Kind != actors.ProgressToolOutput {
					continue
				}
				outputs++
				if e.Seq <= lastSeq || e.Tool != "bash" || e.Agent != "edge-s" {
					t.Fatalf("tool_output %+v after seq %d", e, lastSeq)
				}
				lastSeq = e.Seq
				streamed.WriteString(e.Output)
			}
			seq := strings.Join(kinds, ",")
			if !strings.HasPrefix(seq, "llm_start,llm_end,tool_start,tool_output,") || !strings.HasSuffix(seq, ",tool_output,tool_end,llm_start,llm_end") {
				t.Fatalf("events %s", seq)
			}
			// 3 s of output at most one chunk per 250 ms: several chunks,
			// all of them before the result; only the last may be lost to it.
			if outputs < 5 || !strings.HasPrefix(want, streamed.String()) || streamed.Len() < len("step 1\nstep 2\nstep 3\nstep 4\nstep 5\n") {
				t.Fatalf("%d tool_output events streaming %q", outputs, streamed.String())
			}
			if st := node.ProgressStats(); st.Routed.Load() < int64(outputs) || st.RateLimited.Load() != 0 || st.Invalid.Load() != 0 {
				t.Fatalf("progress stats routed %d rate_limited %d invalid %d", st.Routed.Load(), st.RateLimited.Load(), st.Invalid.Load())
			}

			// The same rows as the unwatched call, on both sides.
			const cols = `status, error_type, exit_code, result_excerpt, result_bytes, agent_id, tool`
			orch := query(t, node.AuditPath(), `SELECT conversation_id, request_id, `+cols+` FROM tool_calls ORDER BY conversation_id`)
			if len(orch) != 2 || orch[0][0] != "plain" || orch[1][0] != "watched" {
				t.Fatalf("orchestrator audit %v", orch)
			}
			if fmt.Sprint(orch[0][2:]) != fmt.Sprint(orch[1][2:]) || orch[1][2] != "success" {
				t.Fatalf("orchestrator rows differ:\n plain   %v\n watched %v", orch[0], orch[1])
			}
			edgeRows := query(t, edgeDB, `SELECT conversation_id, request_id, `+cols+` FROM tool_calls ORDER BY conversation_id`)
			if len(edgeRows) != 2 || fmt.Sprint(edgeRows[0][2:]) != fmt.Sprint(edgeRows[1][2:]) ||
				edgeRows[1][1] != orch[1][1] || edgeRows[0][1] != orch[0][1] {
				t.Fatalf("edge audit %v, orchestrator %v", edgeRows, orch)
			}
		})
	}
}

// vmHWM reads the peak resident set size of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestToolOutputFloodIsBounded runs a tool that writes 100 MB, as fast as
// it can and spread over seconds, on a real edge process: the progress
// reports on the wire stay within the per-call bounds, the agent's memory
// does not grow with the output, and the call ends with the usual cut
// result.
func TestToolOutputFloodIsBounded(t *testing.T) {
	for name, flood := range map[string]string{
		"fast": `yes | head -c 100000000`,
		"slow": `for i in $(seq 40); do yes | head -c 2500000; sleep 0.1; done`,
	} {
		t.Run(name, func(t *testing.T) { testFlood(t, flood) })
	}
}

func testFlood(t *testing.T, flood string) {
	url := mqtttest.StartEmbedded(t)
	node := startNode(t, url, bashTranscript("edge-f", flood, 1))
	_, pid := startBashEdge(t, "edge-f", url)
	ctx := nodeWithAgent(t, node, 120*time.Second)
	// Count what the agent puts on the wire, not only what reaches the chat.
	watch := mqtttest.Connect(t, mqttc.Options{BrokerURL: url, ClientID: "flood-watch"})
	var mu sync.Mutex
	var wireReports, wireBytes int
	var lastNote string
	if err := watch.Subscribe(wire.ReportsTopic("edge-f"), 0, func(m mqttc.Message) {
		r, err := wire.DecodeReport("edge-f", m.Payload)
		if err != nil || r.ReportType != wire.ReportProgress {
			return
		}
		p, err := wire.DecodeProgress(r)
		if err != nil {
			t.Errorf("progress: %v", err)
			return
		}
		mu.Lock()
		wireReports++
		wireBytes += len(p.Output)
		lastNote = p.Output
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	before := vmHWM(t, pid)
	var events progressRecorder
	start := time.Now()
	ans, err := node.Converse(ctx, orchestrator.ChatInput{ConversationID: "flood", Text: "flood", Progress: events.Add})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	after := vmHWM(t, pid)

	if !strings.HasPrefix(ans.Text, "y\ny\n") {
		t.Fatalf("answer %.200q", ans.Text)
	}
	rows := query(t, node.AuditPath(), `SELECT status, exit_code, result_bytes FROM tool_calls WHERE conversation_id = 'flood'`)
	if len(rows) != 1 || rows[0][0] != "success" || fmt.Sprint(rows[0][1]) != "0" {
		t.Fatalf("audit %v", rows)
	}
	// Every report the agent sent has arrived once the late ones had time.
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	maxReports := int(elapsed/edge.StreamInterval) + 2
	if wireReports == 0 || wireReports > maxReports {
		t.Fatalf("%d progress reports in %v, at most %d allowed", wireReports, elapsed, maxReports)
	}
	if wireBytes > edge.StreamBudgetBytes+wireReports*64 {
		t.Fatalf("%d bytes streamed in %d reports, budget %d", wireBytes, wireReports, edge.StreamBudgetBytes)
	}
	if !strings.Contains(lastNote, "bytes of output not streamed") {
		t.Fatalf("last report %q is not the note", lastNote)
	}
	if growth := after - before; growth > 64<<20 {
		t.Fatalf("the agent's peak RSS grew by %d MiB (from %d MiB) for 100 MB of output", growth>>20, before>>20)
	}
	t.Logf("100 MB in %v: %d progress reports, %d bytes streamed, agent peak RSS %d → %d MiB",
		elapsed.Round(time.Millisecond), wireReports, wireBytes, before>>20, after>>20)
	outputs := 0
	for _, e := range events.All() {
		if e.Kind == actors.ProgressToolOutput {
			outputs++
		}
	}
	if outputs > wireReports {
		t.Fatalf("chat saw %d outputs, agent sent %d", outputs, wireReports)
	}
}

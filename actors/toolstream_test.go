package actors

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// progressKinds names each event of l by its kind, a tool's output with
// the output.
func progressKinds(l *progressLog) []string {
	var out []string
	for _, p := range l.All() {
		k := p.Kind
		if k == ProgressToolOutput {
			k += ":" + p.Output
		}
		out = append(out, k)
	}
	return out
}

// sendProgress delivers a progress report from the fake agent.
func (h *harness) sendProgress(t *testing.T, p wire.Progress) {
	t.Helper()
	r, err := wire.NewReport(h.edge.id, "monitor", wire.ReportProgress, time.Now().Unix(), p)
	if err != nil {
		t.Fatal(err)
	}
	h.sys.Root.Send(h.edges.PID, &ReportIn{AgentID: h.edge.id, Report: r})
}

// TestStreamedOutputReachesTheChat streams three chunks, one of them twice
// and one out of order, before the result: the chat sees each new chunk
// once, in order, between tool_start and tool_end.
func TestStreamedOutputReachesTheChat(t *testing.T) {
	stats := &ProgressStats{}
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) { o.Progress = stats }, nil)
	var asked []bool
	h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) {
		asked = append(asked, p.StreamOutput)
		id := cmd.RequestID
		h.sendProgress(t, wire.Progress{RequestID: id, Seq: 1, Output: "one "})
		h.sendProgress(t, wire.Progress{RequestID: id, Seq: 1, Output: "one "}) // redelivered
		h.sendProgress(t, wire.Progress{RequestID: id, Seq: 3, Output: "three "})
		h.sendProgress(t, wire.Progress{RequestID: id, Seq: 2, Output: "two "}) // overtaken: dropped
		testenv.Eventually(t, 5*time.Second, func() bool { return stats.Routed.Load() == 4 }, "four reports routed")
		h.edge.reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: p.Tool, Result: "done", RequestID: id})
		h.sendProgress(t, wire.Progress{RequestID: id, Seq: 4, Output: "late "}) // after the result
	}
	var log progressLog
	if ans := h.ask(t, &Chat{ConversationID: "c", Text: "go", Progress: log.Add}); ans.Err != nil || ans.Text != "tool said: done" {
		t.Fatalf("answer %+v", ans)
	}
	if len(asked) != 1 || !asked[0] {
		t.Fatalf("stream_output asked %v, want true for a watched chat", asked)
	}
	got := strings.Join(progressKinds(&log), ",")
	if want := "llm_start,llm_end,tool_start,tool_output:one ,tool_output:three ,tool_end,llm_start,llm_end"; got != want {
		t.Fatalf("progress\n got %s\nwant %s", got, want)
	}
	// A call's events all name its turn: the output's said 0. The
	// completion that asked for the call shows what the model wrote
	// beside it; the one that answered does not repeat the answer.
	var start Progress
	var said []string
	for _, p := range log.All() {
		switch p.Kind {
		case ProgressLLMEnd:
			said = append(said, p.Text)
		case ProgressToolStart:
			start = p
		case ProgressToolOutput, ProgressToolEnd:
			if p.Iteration != start.Iteration {
				t.Errorf("%s of iteration %d, its tool_start's %d", p.Kind, p.Iteration, start.Iteration)
			}
		}
	}
	if fmt.Sprintf("%q", said) != `["calling" ""]` { // echoTranscript's turns
		t.Errorf("llm_end texts %q, want the first turn's words beside its call, then none", said)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return stats.Unknown.Load() == 1 }, "the late report dropped")
	// Dropped silently: no audit event, no warning.
	if k := strings.Join(h.events.kinds(), ","); strings.Contains(k, EventLateResult) {
		t.Fatalf("late progress audited: %s", k)
	}
	if strings.Contains(h.logs.String(), "level=WARN") {
		t.Fatalf("warnings logged:\n%s", h.logs.String())
	}
	if recs := h.audit.All(); len(recs) != 1 || recs[0].ResultExcerpt != "done" {
		t.Fatalf("audit %+v", recs)
	}
}

// TestUnwatchedChatDoesNotAskForStreaming checks that a chat nobody
// watches sends tool commands without stream_output.
func TestUnwatchedChatDoesNotAskForStreaming(t *testing.T) {
	h := newHarness(t, echoTranscript, nil)
	asked := make(chan bool, 1)
	reply := echoReply(h)
	h.edge.onTool = func(cmd wire.Command, p wire.ToolPayload) { asked <- p.StreamOutput; reply(cmd, p) }
	if ans := h.chat(t, "go"); ans.Err != nil {
		t.Fatal(ans.Err)
	}
	if <-asked {
		t.Fatal("stream_output set on a chat without a Progress func")
	}
}

// TestMadeUpProgressIsDroppedSilently floods the edge actor with progress
// for request ids nobody waits for, and with malformed progress: nothing
// is audited, nothing is logged above debug, and the log lines about it
// stay few.
func TestMadeUpProgressIsDroppedSilently(t *testing.T) {
	stats := &ProgressStats{}
	h := newHarnessEdges(t, echoTranscript, nil, func(o *EdgeOptions) { o.Progress = stats }, nil)
	before := len(h.events.kinds())
	for i := range 1000 {
		h.sendProgress(t, wire.Progress{RequestID: "made-up-" + strings.Repeat("x", i%100), Seq: int64(i + 1), Output: "spam"})
	}
	bad, err := wire.NewReport(h.edge.id, "", wire.ReportProgress, 0, map[string]any{"request_id": "x", "seq": -1})
	if err != nil {
		t.Fatal(err)
	}
	h.sys.Root.Send(h.edges.PID, &ReportIn{AgentID: h.edge.id, Report: bad})
	testenv.Eventually(t, 5*time.Second, func() bool { return stats.Unknown.Load() == 1000 && stats.Invalid.Load() == 1 }, "all dropped")
	if got := len(h.events.kinds()); got != before {
		t.Fatalf("%d events audited for made-up progress", got-before)
	}
	logs := h.logs.String()
	if strings.Contains(logs, "level=WARN") || strings.Count(logs, "dropping progress reports") > 2 {
		t.Fatalf("made-up progress logged:\n%s", logs)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/persistence/tiers"
)

// fakeToken is the bearer token of a fakeNode.
const fakeToken = "fake-token-0123456789abcdef"

// fakeNode is an HTTP server on a real socket that speaks the node API's
// chat and status contract, with a data directory that points at it.
// What a chat does depends on its text:
//
//	"slow..."     starts a tool and holds the stream until the client leaves
//	"evil..."     streams tool output and an answer full of escape sequences
//	"status NNN"  answers with HTTP status NNN and an error body
//	"budget N"    answers 429 with Retry-After: N, as the chat input budget does
//	"event-error" fails inside the stream with a 502 error event
//	"approval"    holds a tool call of pi1 bash for approval apr-1, then answers
//	anything else streams a tool call of pi1 sysinfo and answers
type fakeNode struct {
	srv *httptest.Server
	dir string
	// status is what GET /v1/status answers.
	status string

	mu sync.Mutex // guards the fields below
	// approvals is what GET /v1/approvals answers; none when empty.
	approvals []persistence.Approval
	// convs are the conversation ids the chats arrived with.
	convs []string
	// running counts chats in flight; cancelled those whose client left.
	running, cancelled int
}

func newFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	f := &fakeNode{dir: t.TempDir(), status: fakeStatus(time.Now().Add(-3 * time.Second))}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat", f.chat)
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, f.status)
	})
	mux.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		page := orchestrator.ApprovalsPage{Approvals: append([]persistence.Approval{}, f.approvals...)}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(page)
	})
	mux.HandleFunc("GET /v1/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, a := range f.approvals {
			if a.ID == r.PathValue("id") {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(a)
				return
			}
		}
		fakeError(w, http.StatusNotFound, "not_found_error", "no approval "+r.PathValue("id"))
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+fakeToken {
			fakeError(w, http.StatusUnauthorized, "authentication_error", "missing or wrong bearer token")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	writeTestFile(t, filepath.Join(f.dir, orchestrator.HTTPAddrFile), f.srv.URL+"\n")
	writeTestFile(t, filepath.Join(f.dir, orchestrator.HTTPTokenFile), fakeToken+"\n")
	return f
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func fakeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}

// counts returns the chats in flight and those cancelled so far.
func (f *fakeNode) counts() (running, cancelled int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running, f.cancelled
}

func (f *fakeNode) conversations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.convs...)
}

func (f *fakeNode) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ConversationID string `json:"conversation_id"`
		Text           string `json:"text"`
		Stream         bool   `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Text == "" || !req.Stream {
		fakeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("want a streaming chat, got %+v (%v)", req, err))
		return
	}
	var code int
	if _, err := fmt.Sscanf(req.Text, "budget %d", &code); err == nil {
		w.Header().Set("Retry-After", strconv.Itoa(code))
		fakeError(w, http.StatusTooManyRequests, "rate_limit_error", fmt.Sprintf("busy: this chat's input has room in %ds", code))
		return
	}
	if _, err := fmt.Sscanf(req.Text, "status %d", &code); err == nil {
		fakeError(w, code, "some_error", "the fake says "+strings.TrimPrefix(req.Text, "status "))
		return
	}
	f.mu.Lock()
	f.convs = append(f.convs, req.ConversationID)
	n := len(f.convs)
	f.mu.Unlock()
	conv := req.ConversationID
	if conv == "" {
		conv = fmt.Sprintf("conv-%d", n)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		w.(http.Flusher).Flush()
	}
	progress := func(p actors.Progress) {
		p.ConversationID, p.Time = conv, time.Now()
		send(sseProgress, p)
	}
	fmt.Fprint(w, ": keep-alive\n\n")
	send(sseConversation, map[string]string{"conversation_id": conv})
	progress(actors.Progress{Kind: actors.ProgressLLMStart})
	progress(actors.Progress{Kind: actors.ProgressLLMEnd, Status: "success", ElapsedMS: 3})
	switch {
	case strings.HasPrefix(req.Text, "slow"):
		progress(actors.Progress{Kind: actors.ProgressToolStart, Agent: "pi1", Tool: "hang", Args: "{}"})
		f.mu.Lock()
		f.running++
		f.mu.Unlock()
		<-r.Context().Done() // the client closed the request
		f.mu.Lock()
		f.running--
		f.cancelled++
		f.mu.Unlock()
		return
	case req.Text == "event-error":
		send(sseError, map[string]any{"error": map[string]any{"message": "model exploded", "type": "upstream_error"}, "status": 502})
		return
	case req.Text == "approval":
		progress(actors.Progress{Kind: actors.ProgressToolStart, CallID: "c1", Agent: "pi1", Tool: "bash", Args: `{"command":"echo` + strings.Repeat(" x", 100) + "…"})
		progress(actors.Progress{Kind: actors.ProgressApprovalWait, CallID: "c1", Agent: "pi1", Tool: "bash", ApprovalID: "apr-1", Error: "approvals rule 1"})
		progress(actors.Progress{Kind: actors.ProgressToolEnd, CallID: "c1", Agent: "pi1", Tool: "bash", Status: "error", ErrorType: "approval_denied"})
		send(sseAnswer, orchestrator.ChatResponse{ConversationID: conv, Text: "denied"})
		return
	case strings.HasPrefix(req.Text, "evil"):
		progress(actors.Progress{Kind: actors.ProgressToolStart, Agent: "pi1\x1b[2J", Tool: "sysinfo", Args: `{"x":"\u001b]0;pwned\u0007"}`})
		progress(actors.Progress{Kind: actors.ProgressToolOutput, Seq: 1, Output: "line one\x1b[31m red\r\x1b[2Kgone\nline two\u009b1;1H\n"})
		progress(actors.Progress{Kind: actors.ProgressToolEnd, Agent: "pi1", Tool: "sysinfo", Status: "error", ErrorType: "timeout", ElapsedMS: 5003, Error: "took\x07 too long"})
		send(sseAnswer, orchestrator.ChatResponse{ConversationID: conv, Text: "safe \x1b]52;c;cGFzdGU=\x07text\x1b[1A" + strings.Repeat("x", 5000)})
		return
	}
	progress(actors.Progress{Kind: actors.ProgressToolStart, Agent: "pi1", Tool: "sysinfo", Args: `{"x":1}`})
	progress(actors.Progress{Kind: actors.ProgressToolOutput, Seq: 1, Output: "reading /proc\n"})
	progress(actors.Progress{Kind: actors.ProgressToolEnd, Agent: "pi1", Tool: "sysinfo", Status: "success", ElapsedMS: 12, Result: "load 0.1"})
	progress(actors.Progress{Kind: actors.ProgressLLMStart, Iteration: 1})
	fmt.Fprint(w, ": keep-alive\n\n")
	send(sseAnswer, orchestrator.ChatResponse{ConversationID: conv, Text: fmt.Sprintf("answer %d: pi1 is fine (%s)", n, req.Text), Iterations: 2, ToolCalls: 1})
}

// fakeStatus is the status document of a node, written from the node's own
// types so that it cannot drift from what evoclaw serve sends; pi1 was
// heard at lastSeen.
func fakeStatus(lastSeen time.Time) string {
	cold := &cold.Status{ShippedSeq: 90, HeadSeq: 100, Lag: 10, LastError: "cold store gone", Failures: 3}
	s := orchestrator.Status{NodeID: "orch-1", Broker: "tcp://127.0.0.1:1883",
		Ready: orchestrator.Readiness{Ready: false, Checks: []orchestrator.ReadyCheck{{Name: "audit", Reason: "disk full"},
			{Name: "broker", OK: true}}},
		Agents: []orchestrator.AgentStatus{
			{ID: "pi1", Online: true, Capabilities: "Pi 4\x1b]0;owned\x07 kitchen", Tools: []string{"sysinfo", "disk_usage"},
				LastSeen: lastSeen, ToolStats: []orchestrator.ToolStatus{{Name: "sysinfo", Calls: 3, AvgMs: 12, MaxMs: 20}, {Name: "disk_usage"}}},
			{ID: "garage", Capabilities: "Pi Zero", Tools: []string{"door"},
				ToolStats: []orchestrator.ToolStatus{{Name: "door", Calls: 4, Errors: 1, Timeouts: 1, AvgMs: 10, MaxMs: 30}}}},
		Metrics:    actors.MetricsSnapshot{Calls: 3, Tools: map[string]actors.ToolStats{"pi1__sysinfo": {Calls: 3, TotalMs: 36, MaxMs: 20}}},
		Audit:      tiers.Status{Retention: sqlite.RetentionStatus{ChainStart: 7}, Cold: cold},
		AuditWrite: orchestrator.AuditWriteStatus{FreeBytes: 5 << 20},
		LLM: orchestrator.LLMStatus{Provider: "chain", Links: []orchestrator.LLMLink{{State: "cooling",
			Health: resilient.Health{Provider: "openai", Model: "gpt-x", CoolingUntil: lastSeen.Add(72 * time.Hour)}}}},
		MQTT: orchestrator.MQTTStatus{URL: "tcp://127.0.0.1:1883", Embedded: true, Connected: true, ClientCount: 1,
			Clients: []broker.ClientInfo{{ID: "evoclaw-pi1", Username: "pi1", Remote: "127.0.0.1:5555"}}},
		Groups: []orchestrator.GroupStatus{{Name: "sensors", Members: []string{"pi1", "garage"}, Online: []string{"pi1"}, Tools: []string{"sysinfo"}},
			{Name: "cellar", Members: []string{"cellar-*"}, Online: []string{}, Tools: []string{}}},
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

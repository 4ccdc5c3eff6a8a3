package orchestrator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
)

// appendBodies stores msgs in conversation id of node's store, each as
// the JSON of an llm.Message.
func appendBodies(t *testing.T, node *Node, id string, msgs ...llm.Message) {
	t.Helper()
	rows := make([]persistence.Message, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = persistence.Message{Role: m.Role, Body: b}
	}
	if err := node.store.AppendMessages(context.Background(), id, rows); err != nil {
		t.Fatal(err)
	}
}

// getMessages calls the handler of GET /v1/conversations/{id}/messages
// and decodes its answer, which it returns too.
func getMessages(t *testing.T, node *Node, id, query string) (MessageList, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", "/v1/conversations/"+id+"/messages"+query, nil)
	req.SetPathValue("id", id)
	rec := httptest.NewRecorder()
	node.handleMessages(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
	}
	var l MessageList
	decodeJSON(t, rec.Body.Bytes(), &l)
	return l, rec.Body.Bytes()
}

// TestMessagesOfHugeBodiesCostWhatTheySend stores ten messages of 4 MiB
// and reads them with the largest limit: what the handler allocates must
// be about what it sends (ten times 16 KiB), not the 40 MiB stored, which
// it did when it read and decoded each whole body before cutting it.
func TestMessagesOfHugeBodiesCostWhatTheySend(t *testing.T) {
	node, _, _ := startAPI(t, nil, Options{})
	const n, size = 10, 4 << 20
	big := make([]llm.Message, n)
	for i := range big {
		big[i] = llm.Message{Role: llm.RoleUser, Content: strings.Repeat("é", size/2)}
	}
	appendBodies(t, node, "bigc", big...)

	getMessages(t, node, "bigc", "?limit=500") // warm: statements, pools
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l, raw := getMessages(t, node, "bigc", "?limit=500")
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("one GET of %d messages of %d bytes allocated %d bytes", n, size, alloc)
	if bound := uint64(8 << 20); alloc > bound {
		t.Errorf("one GET allocated %d bytes, want at most %d (the bodies total %d)", alloc, bound, n*size)
	}
	if len(l.Messages) != n {
		t.Fatalf("%d messages, want %d", len(l.Messages), n)
	}
	for _, m := range l.Messages {
		want := strings.Repeat("é", MaxMessageText/2)
		if m.Content != want || !m.Cut || m.Role != llm.RoleUser {
			t.Fatalf("message %d: %d bytes of content, cut %v; want %d, cut", m.Seq, len(m.Content), m.Cut, len(want))
		}
	}
	// Concurrent GETs cost each its own, not gigabytes together.
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			req := httptest.NewRequest("GET", "/v1/conversations/bigc/messages?limit=500", nil)
			req.SetPathValue("id", "bigc")
			rec := httptest.NewRecorder()
			node.handleMessages(rec, req)
			if rec.Code != http.StatusOK {
				t.Errorf("status %d", rec.Code)
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	if alloc, bound := after.TotalAlloc-before.TotalAlloc, uint64(4*8<<20); alloc > bound {
		t.Errorf("four concurrent GETs allocated %d bytes, want at most %d", alloc, bound)
	}
	// A cut message says how large it is.
	var sizes struct {
		Messages []struct {
			Size int64 `json:"size"`
		} `json:"messages"`
	}
	decodeJSON(t, raw, &sizes)
	if body, _ := json.Marshal(big[0]); sizes.Messages[0].Size != int64(len(body)) {
		t.Errorf("size %d, want the body's %d", sizes.Messages[0].Size, len(body))
	}
}

// TestSessionsHistoryOfHugeBodies: the sessions_history tool reads
// previews too, so a model asking for the history of a conversation of
// large messages costs what the answer holds, not what is stored.
func TestSessionsHistoryOfHugeBodies(t *testing.T) {
	node, _, _ := startAPI(t, nil, Options{})
	const n, size = 4, 4 << 20
	big := make([]llm.Message, n)
	for i := range big {
		big[i] = llm.Message{Role: llm.RoleUser, Content: strings.Repeat("x", size)}
	}
	appendBodies(t, node, "bigh", big...)
	s := newSessionTools(node)
	s.history(context.Background(), "bigh", historyMax) // warm
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := s.history(context.Background(), "bigh", historyMax)
	runtime.ReadMemStats(&after)
	if out.ErrorType() != "" {
		t.Fatalf("history: %s %s", out.ErrorType(), out.ErrorText())
	}
	if alloc, bound := after.TotalAlloc-before.TotalAlloc, uint64(4<<20); alloc > bound {
		t.Errorf("sessions_history of %d messages of %d bytes allocated %d bytes, want at most %d", n, size, alloc, bound)
	}
	var res struct {
		Messages []MessageView `json:"messages"`
	}
	decodeJSON(t, []byte(out.Text()), &res)
	if len(res.Messages) != n {
		t.Fatalf("%d messages, want %d", len(res.Messages), n)
	}
	for _, m := range res.Messages {
		if m.Content != strings.Repeat("x", historyText) || !m.Cut {
			t.Fatalf("message %d: %d bytes, cut %v; want %d, cut", m.Seq, len(m.Content), m.Cut, historyText)
		}
	}
}

// session_status learns a conversation's last activity and message count
// without reading its newest message, which may be megabytes; it still
// tells them, and not_found for a conversation that has none.
func TestSessionStatusOfHugeBody(t *testing.T) {
	node, _, _ := startAPI(t, nil, Options{})
	const size = 4 << 20
	appendBodies(t, node, "bigs",
		llm.Message{Role: llm.RoleUser, Content: "hi"},
		llm.Message{Role: llm.RoleAssistant, Content: strings.Repeat("x", size)})
	stored, err := node.store.RecentMessages(context.Background(), "bigs", 1)
	if err != nil || len(stored) != 1 {
		t.Fatalf("newest message: %v, %d", err, len(stored))
	}
	s := newSessionTools(node)
	s.status(context.Background(), "bigs") // warm
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := s.status(context.Background(), "bigs")
	runtime.ReadMemStats(&after)
	if out.ErrorType() != "" {
		t.Fatalf("status: %s %s", out.ErrorType(), out.ErrorText())
	}
	if alloc, bound := after.TotalAlloc-before.TotalAlloc, uint64(size/4); alloc > bound {
		t.Errorf("session_status over a %d-byte message allocated %d bytes, want at most %d", size, alloc, bound)
	}
	var res struct {
		MessageCount int64     `json:"message_count"`
		LastActivity time.Time `json:"last_activity"`
	}
	decodeJSON(t, []byte(out.Text()), &res)
	if res.MessageCount != stored[0].Seq || !res.LastActivity.Equal(stored[0].Time) {
		t.Errorf("status says %d messages, last at %v; the store's newest is seq %d at %v", res.MessageCount, res.LastActivity, stored[0].Seq, stored[0].Time)
	}
	if out := s.status(context.Background(), "none-such"); out.ErrorType() != wire.ErrNotFound {
		t.Errorf("status of an unknown conversation: %s %q", out.ErrorType(), out.ErrorText())
	}
}

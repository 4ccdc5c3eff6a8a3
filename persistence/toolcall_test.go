package persistence

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

func validCall() ToolCall {
	return ToolCall{Node: "n1", Side: SideEdge, Tool: "shell", Status: StatusSuccess}
}

func TestToolCallValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(c *ToolCall)
		wantErr string // substring; empty means valid
	}{
		{"minimal", func(c *ToolCall) {}, ""},
		{"params object", func(c *ToolCall) { c.Params = []byte(`{"cmd":"ls"}`) }, ""},
		{"orchestrator error", func(c *ToolCall) { c.Side = SideOrchestrator; c.Status = StatusError }, ""},
		{"no node", func(c *ToolCall) { c.Node = "" }, "node is empty"},
		{"bad side", func(c *ToolCall) { c.Side = "cloud" }, `side "cloud"`},
		{"no tool", func(c *ToolCall) { c.Tool = "" }, "tool is empty"},
		{"bad status", func(c *ToolCall) { c.Status = "ok" }, `status "ok"`},
		{"bad params", func(c *ToolCall) { c.Params = []byte(`{"cmd":`) }, "params is not valid JSON"},
		{"negative elapsed", func(c *ToolCall) { c.ElapsedMs = -1 }, "elapsed_ms -1"},
		{"negative size", func(c *ToolCall) { c.ResultBytes = -1 }, "result_bytes -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCall()
			tt.edit(&c)
			wantInvalid(t, c.Validate(), ErrInvalidToolCall, tt.wantErr)
		})
	}
}

// wantInvalid fails t unless err is nil where want is empty, or else wraps
// sentinel and mentions want: the check of every Validate test.
func wantInvalid(t *testing.T, err, sentinel error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		return
	}
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Validate: got %v, want %v mentioning %q", err, sentinel, want)
	}
}

func TestNewRecordID(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		id := NewRecordID()
		if len(id) != RecordIDLen {
			t.Fatalf("id %q has length %d, want %d", id, len(id), RecordIDLen)
		}
		if _, err := hex.DecodeString(id); err != nil || strings.ToLower(id) != id {
			t.Fatalf("id %q is not lower-case hex", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestNewRecordIDTimeOrdered(t *testing.T) {
	first := NewRecordID()
	// Poll until the millisecond clock moves on instead of sleeping a guess.
	start := time.Now().UnixMilli()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().UnixMilli() == start {
		if time.Now().After(deadline) {
			t.Fatal("clock did not advance")
		}
	}
	second := NewRecordID()
	if second <= first {
		t.Fatalf("later id %q does not sort after earlier id %q", second, first)
	}
}

func TestRequestStateString(t *testing.T) {
	tests := []struct {
		s    RequestState
		want string
	}{
		{RequestNew, "new"},
		{RequestRunning, "running"},
		{RequestDone, "done"},
		{0, "RequestState(0)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%d.String() = %q, want %q", int(tt.s), got, tt.want)
		}
	}
}

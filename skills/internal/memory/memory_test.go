package memory_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/internal/memory"
)

func open(t *testing.T, path string, max int) (*memory.Store, *skills.Toolset) {
	t.Helper()
	s, err := memory.Open(path, max)
	if err != nil {
		t.Fatal(err)
	}
	ts := skills.NewToolset(nil, skills.ExecOptions{Granted: []string{skills.PermMemory}})
	if err := ts.Add(memory.Tools(s)...); err != nil {
		t.Fatal(err)
	}
	return s, ts
}

// TestMemorySurvivesRestart writes notes, closes the store (a restart),
// and finds them by full-text search.
func TestMemorySurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	s, ts := open(t, path, 3)
	ctx := context.Background()
	for _, args := range []map[string]any{
		{"content": "The garden pump runs at night to save power.", "topic": "garden"},
		{"content": "Kitchen sensor moved to the window.", "topic": "sensors"},
	} {
		if out := ts.Call(ctx, "memory_write", args); out.ErrorType() != "" || !strings.HasPrefix(out.Text(), "saved note ") {
			t.Fatalf("write = %+v", out)
		}
	}
	s.Close()
	s.Close() // idempotent

	s, ts = open(t, path, 3)
	defer s.Close()
	out := ts.Call(ctx, "memory_read", map[string]any{"query": "when does the pump run?"})
	if !strings.HasPrefix(out.Text(), "#1 [garden]") { // best match first
		t.Fatalf("search = %q %s", out.Text(), out.ErrorText())
	}
	if out := ts.Call(ctx, "memory_read", map[string]any{"topic": "sensors"}); !strings.Contains(out.Text(), "window") || strings.Contains(out.Text(), "pump") {
		t.Fatalf("by topic = %q", out.Text())
	}
	if out := ts.Call(ctx, "memory_read", map[string]any{"query": `") OR * NEAR(`}); out.ErrorType() != "" {
		t.Fatalf("query with FTS syntax = %+v", out)
	}
	// Replace, fill to the bound, delete.
	ts.Call(ctx, "memory_write", map[string]any{"id": 2.0, "content": "Kitchen sensor is back on the shelf."})
	if out := ts.Call(ctx, "memory_read", map[string]any{"query": "shelf"}); !strings.Contains(out.Text(), "#2") {
		t.Fatalf("replaced note not found: %q", out.Text())
	}
	ts.Call(ctx, "memory_write", map[string]any{"content": "third"})
	if out := ts.Call(ctx, "memory_write", map[string]any{"content": "fourth"}); out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "memory is full") {
		t.Fatalf("write past the bound = %+v", out)
	}
	if out := ts.Call(ctx, "memory_write", map[string]any{"id": 1.0, "delete": true}); out.Text() != "deleted note 1" {
		t.Fatalf("delete = %+v", out)
	}
	if out := ts.Call(ctx, "memory_write", map[string]any{"id": 1.0, "delete": true}); out.ErrorType() != wire.ErrNotFound {
		t.Fatalf("delete again = %+v", out)
	}
	if out := ts.Call(ctx, "memory_write", map[string]any{"content": strings.Repeat("x", memory.MaxNoteBytes+1)}); out.ErrorType() != wire.ErrInvalidParams {
		t.Fatalf("oversize note = %+v", out)
	}
	// Without the memory permission the tools are not offered.
	denied := skills.NewToolset(nil, skills.ExecOptions{})
	denied.Add(memory.Tools(s)...)
	if len(denied.Names()) != 0 || denied.Call(ctx, "memory_read", nil).ErrorType() != wire.ErrPermissionDenied {
		t.Fatal("memory tools offered without the memory permission")
	}
}

package todo_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/internal/todo"
)

func toolset(t *testing.T, dir string) *skills.Toolset {
	t.Helper()
	s, err := todo.Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	ts := skills.NewToolset(nil, skills.ExecOptions{}) // no permission needed
	if err := ts.Add(todo.Tools(s)...); err != nil {
		t.Fatal(err)
	}
	return ts
}

func in(conv string) context.Context {
	return skills.WithCall(context.Background(), skills.Call{ConversationID: conv})
}

// TestTodoPerConversation: each conversation has its own list, kept
// across a reopen of the store (a restart), and bounded.
func TestTodoPerConversation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "todos")
	ts := toolset(t, dir)
	if got := strings.Join(ts.Names(), ","); got != "todoread,todowrite" {
		t.Fatalf("offered %s", got)
	}
	out := ts.CallJSON(in("c1"), "todowrite", []byte(`{"todos":[{"content":"read the sensor log","status":"in_progress","priority":"high"},{"content":"summarize"}]}`))
	if out.ErrorType() != "" || out.Text() != "[~] 1 (in_progress, high): read the sensor log\n[ ] 2 (pending, medium): summarize" {
		t.Fatalf("write = %q %s", out.Text(), out.ErrorText())
	}
	if out := ts.CallJSON(in("c2"), "todoread", nil); out.Text() != "the todo list is empty" {
		t.Fatalf("other conversation sees %q", out.Text())
	}
	os.WriteFile(filepath.Join(dir, ".tmp-leftover"), []byte("half"), 0o600) // a crash mid-write
	ts = toolset(t, dir)                                                     // a restart
	if _, err := os.Stat(filepath.Join(dir, ".tmp-leftover")); err == nil {
		t.Error("leftover temporary not swept")
	}
	if out := ts.CallJSON(in("c1"), "todoread", []byte(`{"status":"pending"}`)); out.Text() != "[ ] 2 (pending, medium): summarize" {
		t.Fatalf("read after restart = %q %s", out.Text(), out.ErrorText())
	}
	for _, bad := range []string{`{"todos":[{"content":""}]}`, `{"todos":[{"content":"x","status":"done"}]}`, `{"todos":"x"}`,
		`{"todos":[{"content":"` + strings.Repeat("x", todo.MaxContentBytes+1) + `"}]}`, `{"todos":[{"content":"a","id":"1"},{"content":"b","id":"1"}]}`} {
		if out := ts.CallJSON(in("c1"), "todowrite", []byte(bad)); out.ErrorType() != wire.ErrInvalidParams {
			t.Errorf("write %.60s = %+v", bad, out)
		}
	}
	// Only the 3 most recently written lists are kept.
	for _, c := range []string{"c2", "c3", "c4"} {
		ts.CallJSON(in(c), "todowrite", []byte(`{"todos":[{"content":"x"}]}`))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 3 {
		t.Fatalf("%d lists kept, want 3", len(files))
	}
}

package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// A tool message with an image round-trips through the messages table:
// the parts, image data included, come back as they went in, so the model
// sees the image again on the next turn after a restart. Text messages
// keep their body without parts.
func TestHistoryKeepsImages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	store, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: "photo?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "camera", Arguments: []byte(`{}`)}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Name: "camera", Content: "greenhouse\n[image image/png, 96 base64 bytes]",
			Parts: []llm.Part{llm.TextPart("greenhouse"), llm.ImagePart("image/png", png)}},
	}
	h := history{store}
	ctx := context.Background()
	if err := h.AppendHistory(ctx, "img", msgs); err != nil {
		t.Fatal(err)
	}
	got, err := h.LoadHistory(ctx, "img")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, msgs) {
		t.Fatalf("loaded %+v\nwant %+v", got, msgs)
	}
	res, err := sqlite.QueryReadOnly(ctx, path, `SELECT json_extract(body, '$.parts[1].mime_type'), json_type(body, '$.parts') IS NULL FROM messages WHERE conversation_id = 'img' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Rows; len(got) != 3 || got[2][0] != "image/png" || got[0][1] != int64(1) || got[2][1] != int64(0) {
		t.Fatalf("stored bodies %v", got)
	}
}

// TestLoadHistoryReadsTheEnd: a conversation stored far beyond what the
// model is sent is read from its end, the window's worth, from a user
// message on (before: all of it, 228 MB after six chats of large tool
// results, on every wake of the conversation).
func TestLoadHistoryReadsTheEnd(t *testing.T) {
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	counted := &countingStore{Store: store}
	h, ctx := history{counted}, context.Background()
	result := strings.Repeat("r", 60<<10)
	var msgs []llm.Message
	const exchanges = 300 // 18 MB, twice the window
	for i := range exchanges {
		id := fmt.Sprint("c", i)
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprint("question ", i)},
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "read", Arguments: []byte(`{}`)}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "read", Content: result},
			llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprint("answer ", i)})
	}
	if err := h.AppendHistory(ctx, "long", msgs); err != nil {
		t.Fatal(err)
	}
	got, err := h.LoadHistory(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, m := range got {
		size += m.Size()
	}
	last := got[len(got)-1]
	if got[0].Role != llm.RoleUser || last.Content != fmt.Sprint("answer ", exchanges-1) {
		t.Fatalf("loaded %d messages from %q to %q; want the newest, from a user message on", len(got), got[0].Content, last.Content)
	}
	if size > actors.DefaultMaxHistoryBytes+len(result)*4 || len(got) >= len(msgs) {
		t.Fatalf("loaded %d of %d messages, %d bytes; want about the window (%d)", len(got), len(msgs), size, actors.DefaultMaxHistoryBytes)
	}
	if counted.most >= len(msgs) {
		t.Fatalf("read %d of %d stored messages at once, want the end only", counted.most, len(msgs))
	}
}

// countingStore is a store that keeps the most messages one read returned.
type countingStore struct {
	*sqlite.Store
	most int
}

func (c *countingStore) LoadMessages(ctx context.Context, id string) ([]persistence.Message, error) {
	ms, err := c.Store.LoadMessages(ctx, id)
	c.most = max(c.most, len(ms))
	return ms, err
}

func (c *countingStore) RecentMessages(ctx context.Context, id string, limit int) ([]persistence.Message, error) {
	ms, err := c.Store.RecentMessages(ctx, id, limit)
	c.most = max(c.most, len(ms))
	return ms, err
}

package orchestrator

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
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

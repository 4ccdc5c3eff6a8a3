package openai

import (
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// A tool result with an image goes to the recorded request format: with
// images on, the image follows the tool messages in a user message; with
// images off, the tool message is the result's text.
func TestToolResultImage(t *testing.T) {
	llmtest.ToolResultImage(t, func(t *testing.T, pair string) (llm.Provider, *llmtest.Server) {
		return serve(t, Options{APIKey: "sk-test"}, pair)
	}, "gpt-4o-mini", "call_")
}

// Results of one turn with images each get their label, in order, in the
// one user message after the last tool message; a later turn's images come
// after that turn's results.
func TestImagesFollowTheirTurn(t *testing.T) {
	req := llmtest.ImageRequest("m", "a_")
	img := req.Messages[2]
	img.ToolCallID = "a_img2"
	req.Messages = append(req.Messages[:3], img, req.Messages[3],
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "b_img", Name: "pi-1__read_file", Arguments: []byte(`{}`)}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "b_img", Content: "x", Parts: []llm.Part{llm.ImagePart("image/png", llmtest.PNG)}})
	out := encodeRequest("m", req, false)
	var roles []string
	for _, m := range out.Messages {
		roles = append(roles, m.Role)
	}
	want := []string{"system", "user", "assistant", "tool", "tool", "tool", "user", "assistant", "tool", "user"}
	if len(roles) != len(want) {
		t.Fatalf("roles %v, want %v", roles, want)
	}
	for i := range want {
		if roles[i] != want[i] {
			t.Fatalf("roles %v, want %v", roles, want)
		}
	}
	parts := out.Messages[6].Content.([]chatPart)
	if len(parts) != 4 || parts[0].Text != "Images of the result of tool call a_img (pi-1__read_file):" ||
		parts[2].Text != "Images of the result of tool call a_img2 (pi-1__read_file):" || parts[3].ImageURL == nil {
		t.Fatalf("images message %+v", parts)
	}
	last := out.Messages[9].Content.([]chatPart)
	if len(last) != 2 || last[0].Text != "Images of the result of tool call b_img:" {
		t.Fatalf("last images message %+v", last)
	}
	if c := out.Messages[8].Content; c != "[image 1: image/png, 96 base64 bytes, in the next message]" {
		t.Fatalf("tool text %q", c)
	}
}

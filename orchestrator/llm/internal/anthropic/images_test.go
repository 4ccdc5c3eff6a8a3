package anthropic

import (
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// A tool result with an image goes to the recorded request format: with
// images on, an image block inside the tool_result; with images off, the
// result's text.
func TestToolResultImage(t *testing.T) {
	llmtest.ToolResultImage(t, func(t *testing.T, pair string) (llm.Provider, *llmtest.Server) {
		return serve(t, Options{APIKey: "sk-ant-test"}, pair)
	}, "claude-sonnet-4-5", "toolu_")
}

// A user message with images (tool results written as text in prompt tool
// mode) becomes text and image blocks; empty text parts are left out.
func TestUserMessageImages(t *testing.T) {
	out := encodeRequest("m", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "see",
		Parts: []llm.Part{llm.TextPart("see"), llm.TextPart(""), llm.ImagePart("image/jpeg", llmtest.PNG)}}}}, false)
	if len(out.Messages) != 1 {
		t.Fatalf("messages %+v", out.Messages)
	}
	b := out.Messages[0].Content
	if len(b) != 2 || b[0].Text != "see" || b[1].Type != "image" || b[1].Source.MediaType != "image/jpeg" || b[1].Source.Data != llmtest.PNG {
		t.Fatalf("blocks %+v", b)
	}
}

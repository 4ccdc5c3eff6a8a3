package anthropic

import (
	"context"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/images"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// A tool result with an image goes to the recorded request format: with
// images on, an image block inside the tool_result; with images off, the
// result's text.
func TestToolResultImage(t *testing.T) {
	for _, tt := range []struct {
		pair   string
		send   bool
		answer string
	}{
		{"tool_result_image.json", true, "The image is a single green pixel; the Pi is at 45.6 °C."},
		{"tool_result_image_off.json", false, "I cannot see the image; the Pi is at 45.6 °C."},
	} {
		t.Run(tt.pair, func(t *testing.T) {
			p, s := serve(t, Options{APIKey: "sk-ant-test"}, tt.pair)
			w := images.Wrap(p, images.Settings{Send: tt.send}, nil)
			r, err := w.Complete(context.Background(), llmtest.ImageRequest("claude-sonnet-4-5", "toolu_"))
			if err != nil {
				t.Fatal(err)
			}
			if r.Message.Content != tt.answer || s.Requests() != 1 {
				t.Fatalf("answer %+v after %d requests", r.Message, s.Requests())
			}
		})
	}
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

package llmtest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/images"
)

// PNG is a 1×1 PNG image in base64 (96 bytes, 70 decoded).
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// ImageRequest is the second turn of a chat whose tool results hold an
// image: the model read a PNG and asked for the CPU temperature; the first
// result is a caption and the image, the second text. Call ids are prefix
// followed by "img" and "sys".
func ImageRequest(model, prefix string) llm.Request {
	return llm.Request{Model: model, System: "You run tools on Raspberry Pis.", MaxTokens: 512, Tools: Tools(),
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "What does the greenhouse camera show, and how warm is the Pi?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{ID: prefix + "img", Name: "pi-1__read_file", Arguments: json.RawMessage(`{"path":"greenhouse.png"}`)},
				{ID: prefix + "sys", Name: "pi-1__sysinfo", Arguments: json.RawMessage(`{}`)},
			}},
			{Role: llm.RoleTool, ToolCallID: prefix + "img", Name: "pi-1__read_file",
				Content: "greenhouse.png, 1x1 pixels\n[image image/png, 96 base64 bytes]",
				Parts:   []llm.Part{llm.TextPart("greenhouse.png, 1x1 pixels"), llm.ImagePart("image/png", PNG)}},
			{Role: llm.RoleTool, ToolCallID: prefix + "sys", Name: "pi-1__sysinfo", Content: "temp=45.6'C load=0.12"},
		}}
}

// ToolResultImage checks that a tool result with an image goes to the
// recorded request format: with images on (the pair
// tool_result_image.json) the model sees the image, with images off
// (tool_result_image_off.json) the result's text. serve makes a provider
// talking to a server of one pair; model and prefix make the request as
// ImageRequest does.
func ToolResultImage(t *testing.T, serve func(t *testing.T, pair string) (llm.Provider, *Server), model, prefix string) {
	for _, tt := range []struct {
		pair   string
		send   bool
		answer string
	}{
		{"tool_result_image.json", true, "The image is a single green pixel; the Pi is at 45.6 °C."},
		{"tool_result_image_off.json", false, "I cannot see the image; the Pi is at 45.6 °C."},
	} {
		t.Run(tt.pair, func(t *testing.T) {
			p, s := serve(t, tt.pair)
			w := images.Wrap(p, images.Settings{Send: tt.send}, nil)
			r, err := w.Complete(context.Background(), ImageRequest(model, prefix))
			if err != nil {
				t.Fatal(err)
			}
			if r.Message.Content != tt.answer || s.Requests() != 1 {
				t.Fatalf("answer %+v after %d requests", r.Message, s.Requests())
			}
		})
	}
}

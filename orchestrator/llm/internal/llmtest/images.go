package llmtest

import (
	"encoding/json"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
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

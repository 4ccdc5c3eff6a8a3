package actors

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

const testPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// tapProvider passes requests on and keeps them.
type tapProvider struct {
	next llm.Provider
	testenv.Recorded[llm.Request]
}

func (p *tapProvider) Name() string { return p.next.Name() }
func (p *tapProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	p.Add(req)
	return p.next.Complete(ctx, req)
}

// jsonHistory is a HistoryStore in memory that round-trips messages through
// JSON, as the audit database does.
type jsonHistory struct {
	mu    sync.Mutex // guards convs
	convs map[string][][]byte
}

func (h *jsonHistory) LoadHistory(_ context.Context, id string) ([]llm.Message, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []llm.Message
	for _, b := range h.convs[id] {
		var m llm.Message
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (h *jsonHistory) AppendHistory(_ context.Context, id string, msgs []llm.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.convs == nil {
		h.convs = map[string][][]byte{}
	}
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		h.convs[id] = append(h.convs[id], b)
	}
	return nil
}

// An in-process tool returns a caption and an image: the provider's next
// request carries the image in the tool message's parts (and the text
// describes it), the history keeps it for the next turn, and the audit row
// keeps its type, size and SHA-256, not its base64.
func TestToolImageReachesTheModel(t *testing.T) {
	camera := &LocalTools{
		List: func() []skills.ToolDef {
			return []skills.ToolDef{{Name: "camera", Description: "Take a photo", Parameters: map[string]any{"type": "object"}}}
		},
		Run: func(context.Context, string, json.RawMessage, int64) skills.Output {
			return skills.Output{Content: []skills.Block{skills.TextBlock("greenhouse, 1x1 pixels"), skills.ImageBlock("image/png", testPNG)}}
		},
	}
	var rec *tapProvider
	hist := &jsonHistory{}
	h := newHarness(t, `{"name":"cam","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"camera","arguments":{}}],"expect_tools":["camera"]},
	  {"content":"I see: {{result c1}}"},
	  {"content":"Still the same photo."}]}`, func(o *ConvOptions) {
		rec = &tapProvider{next: o.Provider}
		o.Provider, o.Toolbox, o.History = rec, Toolboxes{camera}, hist
	})
	if ans := h.chat(t, "what does the camera show?"); !strings.Contains(ans.Text, "greenhouse, 1x1 pixels") {
		t.Fatalf("answer %q", ans.Text)
	}
	h.chat(t, "and now?")

	reqs := rec.All()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, req := range reqs[1:] {
		var tool *llm.Message
		for j := range req.Messages {
			if req.Messages[j].Role == llm.RoleTool {
				tool = &req.Messages[j]
			}
		}
		if tool == nil || len(tool.Parts) != 2 || tool.Parts[0] != llm.TextPart("greenhouse, 1x1 pixels") ||
			tool.Parts[1] != llm.ImagePart("image/png", testPNG) || !strings.Contains(tool.Content, "[image image/png") {
			t.Fatalf("request %d: tool message %+v", i+2, tool)
		}
	}
	recs := h.audit.All()
	if len(recs) != 1 {
		t.Fatalf("audit rows %+v", recs)
	}
	ex := recs[0].ResultExcerpt
	if strings.Contains(ex, testPNG[:20]) || !strings.Contains(ex, "[image image/png, 70 bytes, sha256 ") {
		t.Fatalf("audit excerpt %q", ex)
	}
}

func TestToolMessageImages(t *testing.T) {
	call := llm.ToolCall{ID: "c", Name: "cam"}
	text := skills.Output{Content: []skills.Block{skills.TextBlock("a"), skills.TextBlock("b")}}
	if m := toolMessage(call, text); m.Parts != nil || m.Content != "a\nb" || auditText(text) != text.Text() {
		t.Fatalf("text result %+v, audit %q", m, auditText(text))
	}
	failed := skills.Output{Content: []skills.Block{skills.ImageBlock("image/png", testPNG), skills.ErrorBlock("execution_failed", "boom")}}
	if m := toolMessage(call, failed); m.Parts != nil || !m.IsError {
		t.Fatalf("failed result %+v", m)
	}
	// A type models do not take is a note; the result keeps its other image.
	mixed := skills.Output{Content: []skills.Block{skills.ImageBlock("image/bmp", testPNG), skills.ImageBlock("image/png", testPNG)}, Truncated: true, ResultBytes: 9}
	m := toolMessage(call, mixed)
	if len(m.Parts) != 3 || m.Parts[1] != llm.ImagePart("image/png", testPNG) || !strings.Contains(m.Parts[0].Text, "not sent: type \"image/bmp\"") ||
		m.Parts[2].Text != "[output truncated by the agent: 9 bytes in all]" || !strings.Contains(m.Content, "not sent: type \"image/bmp\"") {
		t.Fatalf("mixed result %+v", m)
	}
	// Over MaxResultImageBytes: no image kept, the notes are in the text.
	huge := skills.Output{Content: []skills.Block{skills.ImageBlock("image/png", strings.Repeat("AAAA", MaxResultImageBytes/4+1))}}
	if m := toolMessage(call, huge); m.Parts != nil || !strings.Contains(m.Content, "the result's images exceed") {
		t.Fatalf("huge result: parts %d, content %.200q", len(m.Parts), m.Content)
	}
	if s := auditText(skills.Output{Content: []skills.Block{skills.ImageBlock("image/png", "!!")}}); s != "[image image/png, 2 base64 bytes that do not decode]" {
		t.Fatalf("audit of broken data %q", s)
	}
}

package budget

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

func user(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }
func text(s string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: s} }
func call(id string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}}
}
func result(id, s string) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: s}
}

var (
	long  = strings.Repeat("x", 3000) // 1000 tokens
	tools = []llm.ToolDef{{Name: "t", Description: strings.Repeat("Reads a file. ", 200), Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string", "description": strings.Repeat("p", 1500)},
			"description": map[string]any{"type": "string"}}}}}
)

func roles(msgs []llm.Message) string {
	var b []string
	for _, m := range msgs {
		s := m.Role[:1]
		if len(m.ToolCalls) > 0 {
			s = "c"
		}
		b = append(b, s+strings.TrimPrefix(m.ToolCallID, "id"))
	}
	return strings.Join(b, " ")
}

func TestFit(t *testing.T) {
	history := []llm.Message{
		{Role: llm.RoleSystem, Content: "rules"}, user(long), call("id1"), result("id1", long), text(long),
		user(long), call("id2"), result("id2", long), text("ok"),
		user("now"), call("id3"), result("id3", "small"),
	}
	tests := []struct {
		name    string
		req     llm.Request
		context int
		roles   string
		dropped int
		tools   int
		cut     int
		err     string
	}{
		{"fits", llm.Request{Messages: history}, 100000, "s u c t1 a u c t2 a u c t3", 0, 0, 0, ""},
		{"drops the oldest exchange", llm.Request{Messages: history}, 4000, "s u c t2 a u c t3", 4, 0, 0, ""},
		{"drops all but the current turn", llm.Request{Messages: history}, 1000, "s u c t3", 8, 0, 0, ""},
		{"then shortens tools", llm.Request{Messages: history, Tools: tools}, 1000, "s u c t3", 8, 1, 0, ""},
		{"cuts the current tool result", llm.Request{Messages: []llm.Message{user("read it"), call("id1"), result("id1", long+long)}}, 1200, "u c t1", 0, 0, 1, ""},
		{"cannot fit", llm.Request{System: long, Messages: []llm.Message{user(long)}}, 1000, "", 0, 0, 0, "needs about"},
		{"reserve honours max_tokens", llm.Request{Messages: []llm.Message{user(long)}, MaxTokens: 900}, 1500, "", 0, 0, 0, "leaves 600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rep, err := Fit(tt.req, tt.context)
			if testenv.WantErr(t, err, tt.err) {
				return
			}
			if got := roles(out.Messages); got != tt.roles {
				t.Fatalf("messages %q, want %q", got, tt.roles)
			}
			if rep.DroppedMessages != tt.dropped || rep.ToolsShortened != tt.tools || rep.ResultsCut != tt.cut {
				t.Fatalf("report %+v", rep)
			}
			if rep.After > Limit(tt.req, tt.context) || rep.After != Estimate(out) {
				t.Fatalf("after %d, limit %d", rep.After, Limit(tt.req, tt.context))
			}
			if tt.dropped > 0 && !strings.Contains(out.System, "were left out") {
				t.Fatalf("no note in the system prompt: %q", out.System)
			}
			if tt.tools > 0 {
				desc, _ := json.Marshal(out.Tools)
				if strings.Contains(string(desc), "ppp") || out.Tools[0].Description != "Reads a file." || !strings.Contains(string(desc), `"description":{"type":"string"}`) {
					t.Fatalf("tools %s", desc)
				}
				if len(tt.req.Tools[0].Description) < 1000 {
					t.Fatal("the caller's tools were modified")
				}
			}
			if tt.cut > 0 && !strings.Contains(out.Messages[2].Content, "bytes cut to fit") {
				t.Fatalf("result %q", out.Messages[2].Content[len(out.Messages[2].Content)-80:])
			}
		})
	}
}

// The latest user message is never dropped even when it comes first.
func TestFitKeepsCurrentTurn(t *testing.T) {
	req := llm.Request{Messages: []llm.Message{text(long), text(long), user("hi")}}
	out, rep, err := Fit(req, 1200)
	if err != nil || roles(out.Messages) != "u" || rep.DroppedMessages != 2 {
		t.Fatalf("out %q rep %+v err %v", roles(out.Messages), rep, err)
	}
}

func TestProvider(t *testing.T) {
	var sent llm.Request
	next := providerFunc(func(_ context.Context, r llm.Request) (llm.Response, error) {
		sent = r
		return llm.Response{}, nil
	})
	p := Wrap(next, 0, nil)
	req := llm.Request{Model: "m", Messages: []llm.Message{user(long), text(long), user("now")}}
	if _, err := p.Complete(context.Background(), req); err != nil || len(sent.Messages) != 3 {
		t.Fatalf("unknown window must pass through: %v %d", err, len(sent.Messages))
	}
	p.SetContextTokens(1000)
	if _, err := p.Complete(context.Background(), req); err != nil || len(sent.Messages) != 1 {
		t.Fatalf("trimmed: %v %d", err, len(sent.Messages))
	}
	sent = llm.Request{}
	_, err := p.Complete(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{user(long + long)}})
	if llm.KindOf(err) != llm.KindBadRequest || len(sent.Messages) != 0 {
		t.Fatalf("err = %v; a request that cannot fit must not be sent", err)
	}
}

type providerFunc func(context.Context, llm.Request) (llm.Response, error)

func (f providerFunc) Name() string { return "func" }
func (f providerFunc) Complete(ctx context.Context, r llm.Request) (llm.Response, error) {
	return f(ctx, r)
}

// Images count PerImage tokens and more for their size, and go before any
// text: the oldest first, each leaving a note in its message's text.
func TestFitDropsImagesFirst(t *testing.T) {
	img := func(id string, n int) llm.Message {
		m := result(id, "photo "+id)
		m.Parts = []llm.Part{llm.TextPart("photo " + id), llm.ImagePart("image/png", strings.Repeat("A", n))}
		return m
	}
	req := llm.Request{Messages: []llm.Message{user("look"), call("id1"), img("id1", 25600), user("again"), call("id2"), img("id2", 256)}}
	base := Estimate(llm.TextOnly(req))
	if got := Estimate(req); got != base+2*PerImage+100+1 {
		t.Fatalf("estimate %d, want %d", got, base+2*PerImage+101)
	}
	// Room for the newer image only: the older one goes, no text does.
	ctx := base + PerImage + 1 + MaxReserve + 10
	out, rep, err := Fit(req, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ImagesDropped != 1 || rep.DroppedMessages != 0 || rep.ResultsCut != 0 || !rep.Changed() {
		t.Fatalf("report %+v", rep)
	}
	if out.Messages[2].Parts != nil || !strings.HasSuffix(out.Messages[2].Content, "not sent: left out to fit the model's context window]") ||
		!out.Messages[5].HasImages() || !req.Messages[2].HasImages() {
		t.Fatalf("messages %+v", out.Messages)
	}
	// No room for any image: both go before any text.
	out, rep, err = Fit(req, base+MaxReserve+10)
	if err != nil || rep.ImagesDropped != 2 || rep.DroppedMessages != 0 || out.Messages[5].HasImages() {
		t.Fatalf("report %+v err %v", rep, err)
	}
}

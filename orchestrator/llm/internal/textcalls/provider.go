package textcalls

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/tunable"
)

// Settings say what a Provider does with tools. The zero value passes
// requests and answers through unchanged.
type Settings struct {
	// Recover turns tool calls written as text into tool calls (see
	// Recover) in answers without structured calls.
	Recover bool
	// Prompt offers the tools in the system prompt, with instructions to
	// answer in Hermes <tool_call> tags, instead of the API's tools field,
	// and writes earlier calls and results into the history as text. It is
	// for models or servers without native tool support (Ollama refuses
	// tools for a model without the "tools" capability) and implies
	// Recover.
	Prompt bool
}

// Provider wraps an llm.Provider with Settings, which may change while it
// runs (capability probing picks them once the server has answered).
//
// # Concurrency
//
// A Provider is safe for concurrent use when the wrapped one is; Set may
// be called at any time and applies to calls that start afterwards.
type Provider struct {
	tunable.Wrapper[Settings]
}

var _ llm.Provider = (*Provider)(nil)

// Wrap returns next with settings s.
func Wrap(next llm.Provider, s Settings) *Provider {
	p := &Provider{}
	p.Init(next, s)
	return p
}

// Complete asks the wrapped provider and recovers calls written as text.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	s := p.Settings()
	sent := req
	if s.Prompt && len(req.Tools) > 0 {
		sent = PromptRequest(req)
	}
	resp, err := p.Next().Complete(ctx, sent)
	if err != nil || !(s.Recover || s.Prompt) {
		return resp, err
	}
	resp, _ = Recover(resp, req)
	return resp, nil
}

// PromptRequest rewrites req for a model without native tool support: the
// tools are described in the system prompt, the request carries none, an
// assistant message's calls become <tool_call> text and tool results
// become user messages in <tool_response> tags, the convention of the
// Hermes and Qwen chat templates that many small models were trained on.
// A result's images stay in its tags: the user message gets Parts.
func PromptRequest(req llm.Request) llm.Request {
	var b strings.Builder
	b.WriteString(req.System)
	if req.System != "" {
		b.WriteString("\n\n")
	}
	b.WriteString("# Tools\n\nYou may call one or more of the functions below to help with the user's request. Their signatures are in <tools></tools> tags:\n<tools>\n")
	for _, t := range req.Tools {
		params := t.Parameters
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		line, err := json.Marshal(map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": params}})
		if err != nil {
			// A schema that cannot be written is offered by name only.
			line, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "description": t.Description}})
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteString("</tools>\n\nTo call a function, write a JSON object with its name and arguments inside <tool_call></tool_call> tags, one block per call:\n" +
		"<tool_call>\n{\"name\": \"<function name>\", \"arguments\": {<arguments as a JSON object>}}\n</tool_call>\n" +
		"The results come back in <tool_response></tool_response> tags. Answer without tags once you have what you need.")
	out := req
	out.System = b.String()
	out.Tools = nil
	out.Messages = make([]llm.Message, 0, len(req.Messages))
	for _, m := range req.Messages {
		switch {
		case m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0:
			var t strings.Builder
			t.WriteString(m.Content)
			for _, c := range m.ToolCalls {
				if t.Len() > 0 {
					t.WriteByte('\n')
				}
				call, _ := json.Marshal(struct {
					Name      string `json:"name"`
					Arguments any    `json:"arguments"`
				}{c.Name, rawOrText(c)})
				t.WriteString(hermesOpen + "\n")
				t.Write(call)
				t.WriteString("\n" + hermesClose)
			}
			out.Messages = append(out.Messages, llm.Message{Role: llm.RoleAssistant, Content: t.String()})
		case m.Role == llm.RoleTool:
			text := "<tool_response>\n" + m.Content + "\n</tool_response>"
			var parts []llm.Part
			if m.HasImages() {
				// The images stay inside the tags, where the text would be.
				parts = appendText(nil, "<tool_response>\n")
				for _, p := range m.Parts {
					parts = appendPart(parts, p)
				}
				parts = appendText(parts, "\n</tool_response>")
			}
			if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == llm.RoleUser && strings.HasSuffix(out.Messages[n-1].Content, "</tool_response>") {
				// Results of one turn travel together, as the templates do.
				prev := &out.Messages[n-1]
				if parts != nil || prev.Parts != nil {
					if prev.Parts == nil {
						prev.Parts = appendText(nil, prev.Content)
					}
					if parts == nil {
						parts = appendText(nil, text)
					}
					prev.Parts = appendText(prev.Parts, "\n")
					for _, p := range parts {
						prev.Parts = appendPart(prev.Parts, p)
					}
				}
				prev.Content += "\n" + text
				continue
			}
			out.Messages = append(out.Messages, llm.Message{Role: llm.RoleUser, Content: text, Parts: parts})
		default:
			out.Messages = append(out.Messages, m)
		}
	}
	return out
}

// rawOrText is a call's arguments for writing back: the JSON, or the
// model's original text when it was not JSON.
func rawOrText(c llm.ToolCall) any {
	if c.ArgumentsError != "" || !json.Valid(c.Arguments) {
		return c.ArgumentsText()
	}
	return json.RawMessage(c.Arguments)
}

// appendPart appends p to parts, joining it to a text part before it.
func appendPart(parts []llm.Part, p llm.Part) []llm.Part {
	if p.Type != llm.PartImage {
		return appendText(parts, p.Text)
	}
	return append(parts, p)
}

// appendText appends text to parts, joined to a text part before it.
func appendText(parts []llm.Part, text string) []llm.Part {
	if n := len(parts); n > 0 && parts[n-1].Type == llm.PartText {
		parts[n-1].Text += text
		return parts
	}
	return append(parts, llm.TextPart(text))
}

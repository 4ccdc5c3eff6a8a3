package scripted

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// OfflineLabel is how the Offline provider names itself.
const OfflineLabel = "none (no language model configured: chats are refused)"

// maxOfflineTools bounds the tool names NoModel lists.
const maxOfflineTools = 20

// Offline is the provider of a node with no language model configured. It is
// not a model and does not pretend to be one: every call fails with
// NoModel's error (kind llm.KindNotConfigured), which says so, names the
// tools the node could use and how to configure a model. A client of the
// node sees a failed chat (HTTP 503, code model_not_configured), never a
// reply it could take for a model's.
type Offline struct{}

var _ llm.Provider = Offline{}

// Name reports the provider label.
func (Offline) Name() string { return OfflineLabel }

// Complete fails with NoModel's error for the tools req offers.
func (Offline) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	return llm.Response{}, NoModel(req.Tools)
}

// NoModel is the error of a chat that no model can answer: kind
// llm.KindNotConfigured, its message saying that no language model is
// configured, naming the tools offered (at most 20) and how to configure
// one.
func NoModel(tools []llm.ToolDef) *llm.Error {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	list := "none (no edge agent is online and the node has no tools of its own)"
	if len(names) > 0 {
		more := ""
		if len(names) > maxOfflineTools {
			more = fmt.Sprintf(" and %d more", len(names)-maxOfflineTools)
			names = names[:maxOfflineTools]
		}
		list = strings.Join(names, ", ") + more
	}
	msg := "no language model is configured on this node, so it cannot answer chats; this one was refused. " +
		"Tools it could use once it has one: " + list + ". " +
		"Configure [llm] in evoclaw.toml (any OpenAI-compatible server such as llama.cpp or Ollama, or Anthropic) " +
		"and restart the node; see docs/LLM.md"
	return &llm.Error{Kind: llm.KindNotConfigured, Provider: "none", Message: msg}
}

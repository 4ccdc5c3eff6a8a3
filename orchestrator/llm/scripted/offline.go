package scripted

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// OfflineLabel is how the Offline provider names itself.
const OfflineLabel = "offline (no language model configured; fixed replies)"

// maxOfflineTools bounds the tool names an offline reply lists.
const maxOfflineTools = 20

// Offline is the provider of a node with no language model configured. It is
// not a model and says so: every answer is one fixed reply that names the
// tools the node could use now and how to configure a model. It never calls
// a tool and never fails, so a fresh node answers its clients (chat, the
// OpenAI-compatible API) honestly instead of with an error.
type Offline struct{}

var _ llm.Provider = Offline{}

// Name reports the provider label.
func (Offline) Name() string { return OfflineLabel }

// Complete answers with the fixed reply.
func (Offline) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	tools := "none (no edge agent is online and the node has no tools of its own)"
	if len(names) > 0 {
		more := ""
		if len(names) > maxOfflineTools {
			more = fmt.Sprintf(" and %d more", len(names)-maxOfflineTools)
			names = names[:maxOfflineTools]
		}
		tools = strings.Join(names, ", ") + more
	}
	text := "This node has no language model configured, so this is a fixed reply, not an answer. " +
		"Tools it could use for you now: " + tools + ". " +
		"To answer questions, configure [llm] in evoclaw.toml (any OpenAI-compatible server such as llama.cpp or Ollama, " +
		"or Anthropic) and restart the node; see docs/LLM.md."
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}, Model: "offline",
		Provider: OfflineLabel, FinishReason: llm.FinishStop}, nil
}

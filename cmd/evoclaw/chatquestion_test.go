package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// askingProvider asks the person once, then answers with the reply.
type askingProvider struct{}

func (askingProvider) Name() string { return "asking" }
func (askingProvider) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "filling " + last.Content}}, nil
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "q", Name: orchestrator.ToolQuestion,
		Arguments: json.RawMessage(`{"question":"which tank?"}`)}}}}, nil
}

// TestChatAnswersAQuestion: piped, the line after a question is its reply.
func TestChatAnswersAQuestion(t *testing.T) {
	dir := t.TempDir()
	cfg := orchestrator.Config{DataDir: dir, Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"},
		HTTP: orchestrator.HTTPConf{Listen: "127.0.0.1:0"}}
	node, err := orchestrator.Start(context.Background(), cfg, orchestrator.Options{Provider: askingProvider{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	err, out, errOut := chatIn(context.Background(), "fill the tank\nthe blue one\n", nil, "--data-dir", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "? which tank?\n") || !strings.Contains(out, "filling the blue one\n") {
		t.Fatalf("stdout %q\nstderr %q", out, errOut)
	}
}

package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// history keeps conversations in the node's audit database: each
// llm.Message is one row of the messages table, its JSON as the body, so
// an auditor reads the whole conversation with SQL and a restarted node
// continues it.
type history struct {
	store persistence.ConversationStore
}

var (
	_ actors.HistoryStore = history{}
	// The node's LLMLog and Audit are the store behind its history, so
	// queued records commit with the history writes that follow them.
	_ actors.LLMCallQueue  = (*sqlite.Store)(nil)
	_ actors.ToolCallQueue = (*sqlite.Store)(nil)
)

// LoadHistory implements actors.HistoryStore.
func (h history) LoadHistory(ctx context.Context, id string) ([]llm.Message, error) {
	rows, err := h.store.LoadMessages(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs := make([]llm.Message, 0, len(rows))
	for _, r := range rows {
		var m llm.Message
		if err := json.Unmarshal(r.Body, &m); err != nil {
			return nil, fmt.Errorf("message %d of conversation %s: %w", r.Seq, id, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// AppendHistory implements actors.HistoryStore.
func (h history) AppendHistory(ctx context.Context, id string, msgs []llm.Message) error {
	rows := make([]persistence.Message, 0, len(msgs))
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode %s message: %w", m.Role, err)
		}
		rows = append(rows, persistence.Message{Role: m.Role, Body: b})
	}
	return h.store.AppendMessages(ctx, id, rows)
}

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

// LoadHistory implements actors.HistoryStore. It reads the newest part of
// the conversation that the model sees (actors.DefaultMaxHistoryBytes),
// from a user message on, where the store can read a conversation's end
// (RecentMessages): a conversation that ran for months costs its window,
// not all it ever said.
func (h history) LoadHistory(ctx context.Context, id string) ([]llm.Message, error) {
	rows, err := h.rows(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(rows) > 0 && rows[0].Seq > 1 {
		// The start is cut: begin at a user message, so that no tool
		// result comes without its call.
		for len(rows) > 1 && rows[0].Role != llm.RoleUser {
			rows = rows[1:]
		}
	}
	msgs := make([]llm.Message, 0, len(rows))
	for _, r := range rows {
		var m llm.Message
		if err := json.Unmarshal(r.Body, &m); err != nil {
			return nil, fmt.Errorf("message %d of conversation %s: %w", r.Seq, id, err)
		}
		msgs = append(msgs, m)
	}
	return actors.Window(msgs, actors.DefaultMaxHistoryBytes), nil
}

// tailReader reads the newest messages of a conversation
// (*sqlite.Store).
type tailReader interface {
	RecentMessages(ctx context.Context, conversationID string, limit int) ([]persistence.Message, error)
}

// How many of a conversation's newest messages LoadHistory reads: at
// first, then twice as many while they hold less than the window, up to
// the most (a chat adds at most some 700 messages: 10 turns of 64 calls).
const (
	loadFirst = sqlite.RecentPrepared
	loadMost  = 16384
)

// rows reads the stored messages LoadHistory needs, oldest first.
func (h history) rows(ctx context.Context, id string) ([]persistence.Message, error) {
	tr, ok := h.store.(tailReader)
	if !ok {
		return h.store.LoadMessages(ctx, id)
	}
	for n := loadFirst; ; n *= 2 {
		rows, err := tr.RecentMessages(ctx, id, n)
		if err != nil {
			return nil, err
		}
		size := 0
		for _, r := range rows {
			size += len(r.Body)
		}
		if len(rows) < n || n >= loadMost || size >= actors.DefaultMaxHistoryBytes {
			return rows, nil
		}
	}
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

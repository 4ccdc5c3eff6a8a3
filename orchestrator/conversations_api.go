package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Bounds of the conversation endpoints.
const (
	// DefaultConversationsLimit and MaxConversationsLimit bound a page of
	// GET /v1/conversations.
	DefaultConversationsLimit = 50
	MaxConversationsLimit     = 200
	// DefaultMessagesLimit and MaxMessagesLimit bound GET
	// /v1/conversations/{id}/messages: the newest messages are sent.
	DefaultMessagesLimit = 100
	MaxMessagesLimit     = 500
	// MaxMessageText bounds the bytes of one message's content (and of one
	// tool call's arguments) in that answer; longer text is cut.
	MaxMessageText = 16 << 10
	// MessagesReading is how many GET /v1/conversations/{id}/messages
	// read the database at once; one more waits at most MessagesWait for
	// its turn, then is answered 429.
	MessagesReading = 1
	MessagesWait    = 5 * time.Second
)

// ConversationList is a page of GET /v1/conversations.
type ConversationList struct {
	Conversations []ConversationSummary `json:"conversations"`
	// NextCursor fetches the next page (?cursor=); absent on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ConversationSummary is one stored conversation.
type ConversationSummary struct {
	ID           string    `json:"id"`
	FirstTime    time.Time `json:"first_time"`
	LastTime     time.Time `json:"last_time"`
	MessageCount int64     `json:"message_count"`
}

// MessageList is what GET /v1/conversations/{id}/messages answers.
type MessageList struct {
	ConversationID string `json:"conversation_id"`
	// Messages are the newest of the conversation, oldest first.
	Messages []MessageView `json:"messages"`
	// More is true when older messages were left out.
	More bool `json:"more"`
}

// MessageView is one stored message in display form.
type MessageView struct {
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Role    string    `json:"role"`
	Content string    `json:"content"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCallView `json:"tool_calls,omitempty"`
	// Name is the tool a tool message answers.
	Name    string `json:"name,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Cut is true when Content or an argument was cut at MaxMessageText.
	Cut bool `json:"cut,omitempty"`
	// Size is, when Cut, the bytes of the whole stored message (its JSON)
	// in GET /v1/conversations/{id}/messages; absent elsewhere.
	Size int64 `json:"size,omitempty"`
}

// ToolCallView is one tool call of an assistant message.
type ToolCallView struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// errCursor is a malformed ?cursor= of GET /v1/conversations.
var errCursor = errors.New("cursor: want the next_cursor of the previous page")

// formatCursor encodes c as the opaque next_cursor: "LASTMS.ID".
func formatCursor(c sqlite.ConversationCursor) string {
	return strconv.FormatInt(c.LastMs, 10) + "." + c.ID
}

// parseCursor decodes a next_cursor; "" is the first page.
func parseCursor(s string) (sqlite.ConversationCursor, error) {
	if s == "" {
		return sqlite.ConversationCursor{}, nil
	}
	ms, id, ok := strings.Cut(s, ".")
	if !ok {
		return sqlite.ConversationCursor{}, errCursor
	}
	v, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || v < 0 || wire.ValidateAgentID(id) != nil {
		return sqlite.ConversationCursor{}, errCursor
	}
	return sqlite.ConversationCursor{LastMs: v, ID: id}, nil
}

// queryLimit reads the ?limit= parameter: def when absent, refused
// outside 1..maxLimit.
func queryLimit(r *http.Request, def, maxLimit int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, fmt.Errorf("limit: want a number from 1 to %d", maxLimit)
	}
	return n, nil
}

func (n *Node) handleConversations(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r, DefaultConversationsLimit, MaxConversationsLimit)
	if err != nil {
		writeAPIErrorParam(w, http.StatusBadRequest, "limit", err.Error())
		return
	}
	cur, err := parseCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		writeAPIErrorParam(w, http.StatusBadRequest, "cursor", err.Error())
		return
	}
	page, next, err := n.store.ConversationsPage(r.Context(), cur, limit)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	out := ConversationList{Conversations: make([]ConversationSummary, 0, len(page))}
	for _, c := range page {
		out.Conversations = append(out.Conversations, ConversationSummary{ID: c.ID, FirstTime: c.FirstTime, LastTime: c.LastTime,
			MessageCount: c.MessageCount})
	}
	if next != nil {
		out.NextCursor = formatCursor(*next)
	}
	writeJSON(w, http.StatusOK, out)
}

func (n *Node) handleMessages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if wire.ValidateAgentID(id) != nil {
		writeAPIErrorParam(w, http.StatusBadRequest, "id", fmt.Sprintf("conversation id %q: use letters, digits, '-' and '_', at most %d characters",
			echo(id), wire.MaxAgentIDLen))
		return
	}
	limit, err := queryLimit(r, DefaultMessagesLimit, MaxMessagesLimit)
	if err != nil {
		writeAPIErrorParam(w, http.StatusBadRequest, "limit", err.Error())
		return
	}
	// Previews, not RecentMessages: a body larger than MaxMessageText is
	// read by SQLite, which returns the start of each text shown, so a
	// request costs about limit times MaxMessageText whatever the bodies'
	// sizes (a conversation of 4 MiB messages cost gigabytes to a few
	// concurrent requests).
	// A page reads up to limit times MaxMessageText of the database, 8
	// MiB, on one of the store's two read connections, which the chats
	// load their history with: 64 clients asking for such pages at once
	// made a chat wait 7 s for its history, and the pages 14 s.
	wait := time.NewTimer(n.messagesWait)
	select {
	case n.messagesSlots <- struct{}{}:
		wait.Stop()
	case <-wait.C:
		writeAPIError(w, http.StatusTooManyRequests, ErrTypeBusy, fmt.Sprintf("busy: %d other requests read messages for the whole %v this one waited: retry",
			cap(n.messagesSlots), n.messagesWait))
		return
	case <-r.Context().Done():
		wait.Stop()
		return // the caller is gone
	}
	msgs, err := n.store.RecentPreviews(r.Context(), id, limit, MaxMessageText, MaxMessageText+1)
	<-n.messagesSlots
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if len(msgs) == 0 {
		httpError(w, http.StatusNotFound, fmt.Sprintf("no conversation %q", id))
		return
	}
	out := MessageList{ConversationID: id, Messages: make([]MessageView, 0, len(msgs)), More: msgs[0].Seq > 1}
	for _, m := range msgs {
		out.Messages = append(out.Messages, previewView(m))
	}
	writeJSON(w, http.StatusOK, out)
}

// previewView is the display form of a message preview: messageView of a
// whole body, else the same view of what SQLite read of it (its texts'
// first MaxMessageText+1 bytes, which cutText cuts as it would the whole).
func previewView(p sqlite.MessagePreview) MessageView {
	var v MessageView
	switch {
	case p.Body != nil:
		v = messageView(p.Seq, p.Time, p.Role, p.Body)
	case !p.Decoded:
		v = MessageView{Seq: p.Seq, Time: p.Time, Role: p.Role}
		v.Content, v.Cut = cutText(p.Content)
	default:
		v = MessageView{Seq: p.Seq, Time: p.Time, Role: p.Role, IsError: p.IsError}
		var cut bool
		v.Content, v.Cut = cutText(p.Content)
		v.Name, cut = cutText(p.Name)
		v.Cut = v.Cut || cut
		for _, c := range p.ToolCalls {
			name, cutName := cutText(c.Name)
			args, cutArgs := cutText(c.Arguments)
			v.Cut = v.Cut || cutName || cutArgs
			v.ToolCalls = append(v.ToolCalls, ToolCallView{Name: name, Arguments: args})
		}
	}
	if v.Cut {
		v.Size = p.Size
	}
	return v
}

// messageView decodes a stored message body (an llm.Message); a body it
// cannot read is shown as its raw text.
func messageView(seq int64, at time.Time, role string, body []byte) MessageView {
	v := MessageView{Seq: seq, Time: at, Role: role}
	var m llm.Message
	if err := json.Unmarshal(body, &m); err != nil {
		v.Content, v.Cut = cutText(string(body))
		return v
	}
	v.Content, v.Cut = cutText(m.Content)
	v.Name, v.IsError = m.Name, m.IsError
	for _, c := range m.ToolCalls {
		args, cut := cutText(string(c.Arguments))
		v.Cut = v.Cut || cut
		v.ToolCalls = append(v.ToolCalls, ToolCallView{Name: c.Name, Arguments: args})
	}
	return v
}

// cutText cuts s to MaxMessageText bytes on a rune boundary.
func cutText(s string) (string, bool) {
	if len(s) <= MaxMessageText {
		return s, false
	}
	cut := MaxMessageText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// writeAPIErrorParam answers with code and an error body naming the
// request field at fault.
func writeAPIErrorParam(w http.ResponseWriter, code int, param, msg string) {
	writeJSON(w, code, errorBody{Error: apiErrorf(errorTypeFor(code), param, "%s", msg)})
}

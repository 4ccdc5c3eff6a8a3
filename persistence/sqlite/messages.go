package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// AppendMessages stores msgs at the end of conversationID in one
// transaction, numbering them contiguously after the conversation's last
// Seq (the first message of a conversation is 1). It returns after the
// commit; on success it fills in the Seq, ConversationID and zero Time of
// each element of msgs. An invalid message stores nothing. An empty msgs is
// a no-op.
func (s *Store) AppendMessages(ctx context.Context, conversationID string, msgs []persistence.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	now := time.Now()
	rows := make([]persistence.Message, len(msgs))
	ids := make([]string, len(msgs))
	for i := range msgs {
		m := msgs[i]
		if err := m.Validate(conversationID); err != nil {
			return fmt.Errorf("append messages to %q: message %d: %w", conversationID, i, err)
		}
		m.ConversationID = conversationID
		if m.Time.IsZero() {
			m.Time = now
		}
		m.Time = m.Time.UTC()
		m.Body = append([]byte(nil), m.Body...) // the caller may reuse its buffer
		rows[i] = m
		ids[i] = persistence.NewRecordID()
	}
	var first int64 // Seq of rows[0], set by the transaction
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		var err error
		first, err = s.appendMessagesTx(ctx, tx, conversationID, rows, ids)
		return err
	})
	if err != nil {
		return fmt.Errorf("append messages to %q: %w", conversationID, err)
	}
	for i := range msgs {
		msgs[i].ConversationID = conversationID
		msgs[i].Seq = first + int64(i)
		msgs[i].Time = rows[i].Time
	}
	return nil
}

// appendMessagesTx inserts rows after the conversation's last message and
// updates its summary row. It returns the Seq given to rows[0].
func (s *Store) appendMessagesTx(ctx context.Context, tx dbtx, conv string, rows []persistence.Message, ids []string) (int64, error) {
	lo, hi := rows[0].Time, rows[0].Time
	for _, m := range rows[1:] {
		if m.Time.Before(lo) {
			lo = m.Time
		}
		if m.Time.After(hi) {
			hi = m.Time
		}
	}
	// Upsert the summary first: messages reference it (foreign key). The
	// one statement counts the rows in and returns the new count, so the
	// last Seq is not read by a statement of its own.
	n := int64(len(rows))
	var count int64
	err := s.txQueryRow(ctx, tx, qUpsertConversation,
		conv, lo.Format(tsLayout), lo.UnixMilli(), hi.Format(tsLayout), hi.UnixMilli(), n).Scan(&count)
	if err != nil {
		return 0, fmt.Errorf("update conversation: %w", err)
	}
	last := count - n
	for i, m := range rows {
		err := s.insertChained(ctx, tx, "messages", []any{
			ids[i], conv, last + 1 + int64(i), m.Time.Format(tsLayout), m.Time.UnixMilli(), m.Role, string(m.Body)})
		if err != nil {
			return 0, fmt.Errorf("insert message %d: %w", last+1+int64(i), err)
		}
	}
	return last + 1, nil
}

// LoadMessages returns the stored messages of conversationID in Seq order,
// or none for an unknown conversation. It reads through the Store's
// read-only connections, so it sees every committed append and does not
// wait for the writer.
func (s *Store) LoadMessages(ctx context.Context, conversationID string) ([]persistence.Message, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT seq, ts, role, body FROM messages WHERE conversation_id = ? ORDER BY seq`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("load messages of %q: %w", conversationID, err)
	}
	return scanMessages(rows, conversationID)
}

// scanMessages reads the rows (seq, ts, role, body) of conversationID's
// messages and closes them; none gives a nil slice.
func scanMessages(rows *sql.Rows, conversationID string) ([]persistence.Message, error) {
	defer rows.Close()
	var out []persistence.Message
	for rows.Next() {
		var (
			m      persistence.Message
			ts     string
			bodyTx string
		)
		if err := rows.Scan(&m.Seq, &ts, &m.Role, &bodyTx); err != nil {
			return nil, fmt.Errorf("load messages of %q: %w", conversationID, err)
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return nil, fmt.Errorf("load messages of %q: seq %d: bad ts %q: %w", conversationID, m.Seq, ts, err)
		}
		m.Time = t
		m.ConversationID = conversationID
		m.Body = []byte(bodyTx)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load messages of %q: %w", conversationID, err)
	}
	return out, nil
}

// Conversations returns the most recently active conversations first (by
// their latest message time), at most limit of them, all when limit <= 0.
func (s *Store) Conversations(ctx context.Context, limit int) ([]persistence.ConversationInfo, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT conversation_id, first_ts, last_ts, message_count
		FROM conversations ORDER BY last_ms DESC, conversation_id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	var out []persistence.ConversationInfo
	for rows.Next() {
		var (
			c           persistence.ConversationInfo
			first, last string
		)
		if err := rows.Scan(&c.ID, &first, &last, &c.MessageCount); err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		if c.FirstTime, err = time.Parse(time.RFC3339Nano, first); err != nil {
			return nil, fmt.Errorf("list conversations: %q: bad first_ts %q: %w", c.ID, first, err)
		}
		if c.LastTime, err = time.Parse(time.RFC3339Nano, last); err != nil {
			return nil, fmt.Errorf("list conversations: %q: bad last_ts %q: %w", c.ID, last, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

// ConversationCursor is where a page of ConversationsPage starts: after
// the conversation with this last activity (Unix milliseconds) and id, in
// the page order (most recent first, then by id). The zero cursor starts
// at the most recent.
type ConversationCursor struct {
	LastMs int64
	ID     string
}

// ConversationsPage returns at most limit conversations after cur, most
// recently active first, and the cursor of the next page: nil when no more
// follow. limit must be positive.
func (s *Store) ConversationsPage(ctx context.Context, cur ConversationCursor, limit int) ([]persistence.ConversationInfo, *ConversationCursor, error) {
	if limit <= 0 {
		return nil, nil, fmt.Errorf("list conversations: limit %d, want > 0", limit)
	}
	q := `SELECT conversation_id, first_ts, last_ts, message_count, last_ms FROM conversations`
	args := []any{}
	if cur.ID != "" {
		q += ` WHERE last_ms < ?1 OR (last_ms = ?1 AND conversation_id > ?2)`
		args = append(args, cur.LastMs, cur.ID)
	}
	q += fmt.Sprintf(` ORDER BY last_ms DESC, conversation_id LIMIT %d`, limit+1)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	out := []persistence.ConversationInfo{}
	var lastMss []int64
	for rows.Next() {
		var (
			c           persistence.ConversationInfo
			first, last string
			lastMs      int64
		)
		if err := rows.Scan(&c.ID, &first, &last, &c.MessageCount, &lastMs); err != nil {
			return nil, nil, fmt.Errorf("list conversations: %w", err)
		}
		if c.FirstTime, err = time.Parse(time.RFC3339Nano, first); err != nil {
			return nil, nil, fmt.Errorf("list conversations: %q: bad first_ts %q: %w", c.ID, first, err)
		}
		if c.LastTime, err = time.Parse(time.RFC3339Nano, last); err != nil {
			return nil, nil, fmt.Errorf("list conversations: %q: bad last_ts %q: %w", c.ID, last, err)
		}
		out = append(out, c)
		lastMss = append(lastMss, lastMs)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("list conversations: %w", err)
	}
	if len(out) <= limit {
		return out, nil, nil
	}
	out = out[:limit]
	return out, &ConversationCursor{LastMs: lastMss[limit-1], ID: out[limit-1].ID}, nil
}

// RecentMessages returns the newest limit stored messages of
// conversationID in Seq order (all when it has fewer), and none for an
// unknown conversation. limit must be positive.
func (s *Store) RecentMessages(ctx context.Context, conversationID string, limit int) ([]persistence.Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("load messages of %q: limit %d, want > 0", conversationID, limit)
	}
	var (
		rows *sql.Rows
		err  error
	)
	if st := s.recentStatement(); st != nil && limit == RecentPrepared {
		rows, err = st.QueryContext(ctx, conversationID)
	} else {
		rows, err = s.rdb.QueryContext(ctx, qRecentMessages, conversationID, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("load messages of %q: %w", conversationID, err)
	}
	out, err := scanMessages(rows, conversationID)
	if out == nil && err == nil {
		out = []persistence.Message{} // an empty history, not an absent one
	}
	return out, err
}

// qRecentMessages is RecentMessages' query.
const qRecentMessages = `SELECT seq, ts, role, body FROM (
		SELECT seq, ts, role, body FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`

// RecentPrepared is the limit of RecentMessages that every new
// conversation actor asks for first (orchestrator's LoadHistory): its
// query is prepared once on the read connections (Open), with the limit
// written in it. Bound as a parameter, the limit expires the statement at
// every run (SQLite plans a LIMIT with the value bound), which parses it
// again: about 40 µs of a load.
const RecentPrepared = 256

// qRecentPrepared is qRecentMessages with the limit RecentPrepared.
var qRecentPrepared = strings.Replace(qRecentMessages, "LIMIT ?", "LIMIT "+strconv.Itoa(RecentPrepared), 1)

// qUpsertConversation is a hot write, prepared once (stmtcache.go): it adds
// the appended messages to the conversation's summary row and returns its
// new message_count, the Seq of the last of them.
const qUpsertConversation = `INSERT INTO conversations (conversation_id, first_ts, first_ms, last_ts, last_ms, message_count)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (conversation_id) DO UPDATE SET
			first_ts = CASE WHEN excluded.first_ms < first_ms THEN excluded.first_ts ELSE first_ts END,
			first_ms = min(first_ms, excluded.first_ms),
			last_ts = CASE WHEN excluded.last_ms > last_ms THEN excluded.last_ts ELSE last_ts END,
			last_ms = max(last_ms, excluded.last_ms),
			message_count = message_count + excluded.message_count
		RETURNING message_count`

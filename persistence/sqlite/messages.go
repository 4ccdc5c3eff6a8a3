package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+conversationColumns+`
		FROM conversations ORDER BY last_ms DESC, conversation_id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	var out []persistence.ConversationInfo
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

// Conversation returns the summary of conversationID (its first and
// last message times and its last Seq) from the conversations table,
// without reading a message; ok is false when it has none stored.
func (s *Store) Conversation(ctx context.Context, conversationID string) (c persistence.ConversationInfo, ok bool, err error) {
	row := s.rdb.QueryRowContext(ctx, `SELECT `+conversationColumns+` FROM conversations WHERE conversation_id = ?`, conversationID)
	switch c, err = scanConversation(row); {
	case errors.Is(err, sql.ErrNoRows):
		return persistence.ConversationInfo{}, false, nil
	case err != nil:
		return persistence.ConversationInfo{}, false, fmt.Errorf("read conversation %q: %w", conversationID, err)
	}
	return c, true, nil
}

// conversationColumns are the columns of the conversations table that
// scanConversation reads, in its order.
const conversationColumns = `conversation_id, first_ts, last_ts, message_count`

// scanConversation scans a row that starts with conversationColumns into a
// ConversationInfo, and the columns after them into extra.
func scanConversation(row interface{ Scan(...any) error }, extra ...any) (persistence.ConversationInfo, error) {
	var (
		c           persistence.ConversationInfo
		first, last string
	)
	if err := row.Scan(append([]any{&c.ID, &first, &last, &c.MessageCount}, extra...)...); err != nil {
		return c, err
	}
	var err error
	if c.FirstTime, err = time.Parse(time.RFC3339Nano, first); err != nil {
		return c, fmt.Errorf("%q: bad first_ts %q: %w", c.ID, first, err)
	}
	if c.LastTime, err = time.Parse(time.RFC3339Nano, last); err != nil {
		return c, fmt.Errorf("%q: bad last_ts %q: %w", c.ID, last, err)
	}
	return c, nil
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
	q := `SELECT ` + conversationColumns + `, last_ms FROM conversations`
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
		var lastMs int64
		c, err := scanConversation(rows, &lastMs)
		if err != nil {
			return nil, nil, fmt.Errorf("list conversations: %w", err)
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

// MessagePreview is a stored message as RecentPreviews reads it for
// display: whole when its body is small, else only the start of each text
// a display shows, so that a multi-MiB body never reaches Go (SQLite reads
// it, one message at a time).
type MessagePreview struct {
	Seq  int64
	Time time.Time
	Role string
	// Size is the length of the stored body in bytes.
	Size int64
	// Body is the whole stored body when Size is at most RecentPreviews'
	// whole; nil otherwise, and then the fields below hold what was read
	// of it.
	Body []byte
	// Decoded is true when the body has the shape of the orchestrator's
	// llm.Message, whose JSON members previewMembers lists: an object whose
	// members of those names have their types (a member whose name
	// differs from one of them only in case is not read: Decoded is
	// false). Content, Name, IsError and ToolCalls are then its members;
	// otherwise Content is the start of the body itself.
	Decoded bool
	// Content, Name and each call's Name and Arguments (the JSON text of
	// the arguments) are the first text bytes of theirs, perhaps ending
	// inside a UTF-8 sequence: the caller cuts.
	Content   string
	Name      string
	IsError   bool
	ToolCalls []CallPreview
}

// CallPreview is one tool call of a MessagePreview.
type CallPreview struct {
	Name, Arguments string
}

// previewMembers are the JSON members of the orchestrator's llm.Message
// (persistence must not import it) and the JSON types each may have; a
// member absent or null is the zero value.
var previewMembers = map[string][]string{
	"role": {"text"}, "content": {"text"}, "tool_call_id": {"text"}, "name": {"text"},
	"is_error": {"true", "false"}, "parts": {"array"}, "tool_calls": {"array"},
}

// RecentPreviews returns the newest limit stored messages of
// conversationID in Seq order (all when it has fewer), none for an unknown
// conversation, as RecentMessages but in preview form: a body of at most
// whole bytes whole, a larger one as its first text bytes of each text
// (MessagePreview). What it allocates is about whole bytes per small
// body and text bytes per text of a large one, whatever the size of the
// bodies (SQLite parses a large body, one at a time, outside the Go heap).
// limit and text must be positive.
func (s *Store) RecentPreviews(ctx context.Context, conversationID string, limit, whole, text int) ([]MessagePreview, error) {
	if limit <= 0 || text <= 0 {
		return nil, fmt.Errorf("load messages of %q: limit %d and text %d, want > 0", conversationID, limit, text)
	}
	fail := func(err error) ([]MessagePreview, error) {
		return nil, fmt.Errorf("load messages of %q: %w", conversationID, err)
	}
	// One read transaction: the large bodies' queries see the messages the
	// first listed, whatever retention deletes meanwhile.
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, qRecentPreviews, conversationID, limit, whole)
	if err != nil {
		return fail(err)
	}
	out, err := scanPreviews(rows)
	if err != nil {
		return fail(err)
	}
	for i := range out {
		if out[i].Body == nil {
			if err := readPreview(ctx, tx, conversationID, &out[i], text); err != nil {
				return fail(fmt.Errorf("seq %d: %w", out[i].Seq, err))
			}
		}
	}
	return out, nil
}

// qRecentPreviews lists the newest ?2 messages of conversation ?1 in Seq
// order, with the body only when it is at most ?3 bytes. It walks the
// (conversation_id, seq) index from the first of them, so SQLite sorts
// nothing, and it reads no body larger than ?3 (octet_length reads a
// value's length without its bytes).
const qRecentPreviews = `SELECT seq, ts, role, octet_length(body), CASE WHEN octet_length(body) <= ?3 THEN body END
	FROM messages
	WHERE conversation_id = ?1 AND seq > coalesce(
		(SELECT seq FROM messages WHERE conversation_id = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2), 0)
	ORDER BY seq`

// scanPreviews reads the rows of qRecentPreviews and closes them; none
// gives an empty slice.
func scanPreviews(rows *sql.Rows) ([]MessagePreview, error) {
	defer rows.Close()
	out := []MessagePreview{}
	for rows.Next() {
		var (
			p    MessagePreview
			ts   string
			body sql.NullString
		)
		if err := rows.Scan(&p.Seq, &ts, &p.Role, &p.Size, &body); err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return nil, fmt.Errorf("seq %d: bad ts %q: %w", p.Seq, ts, err)
		}
		p.Time = t
		if body.Valid {
			p.Body = []byte(body.String)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Queries of readPreview on the body of message ?1, ?2 (conversation,
// seq); ?3 is how many bytes of a text to return. Each has SQLite parse
// the body and return only starts of its texts.
var (
	// qPreviewMembers: the body's top-level members, in order: name (NULL
	// or a number when the body is not an object), JSON type, and the
	// start of a text value.
	qPreviewMembers = `SELECT j.key, j.type, CASE WHEN j.type = 'text' THEN substr(CAST(j.value AS BLOB), 1, ?3) END
		FROM messages m, json_each(m.body) j WHERE m.conversation_id = ?1 AND m.seq = ?2`
	// qPreviewCalls: each element of tool_calls: its type, the types of
	// id, name and arguments_error, the start of name and of the JSON text
	// of arguments (-> keeps the stored text, escapes included).
	qPreviewCalls = `SELECT e.type, ` + ifObject("e", "json_type(e.value, '$.id')") + `, ` +
		ifObject("e", "json_type(e.value, '$.name')") + `, ` + ifObject("e", "json_type(e.value, '$.arguments_error')") + `, ` +
		ifObject("e", "substr(CAST(e.value ->> '$.name' AS BLOB), 1, ?3)") + `, ` +
		ifObject("e", "substr(CAST(e.value -> '$.arguments' AS BLOB), 1, ?3)") + `
		FROM messages m, json_each(m.body, '$.tool_calls') e WHERE m.conversation_id = ?1 AND m.seq = ?2 ORDER BY e.id`
	// qPreviewBadParts counts the elements of parts that are not parts
	// (objects whose type, text, mime_type and data are strings).
	qPreviewBadParts = `SELECT count(*) FROM messages m, json_each(m.body, '$.parts') p
		WHERE m.conversation_id = ?1 AND m.seq = ?2 AND (p.type NOT IN ('object', 'null')
			OR ` + ifObject("p", "json_type(p.value, '$.type') NOT IN ('text', 'null')") + `
			OR ` + ifObject("p", "json_type(p.value, '$.text') NOT IN ('text', 'null')") + `
			OR ` + ifObject("p", "json_type(p.value, '$.mime_type') NOT IN ('text', 'null')") + `
			OR ` + ifObject("p", "json_type(p.value, '$.data') NOT IN ('text', 'null')") + `)`
	// qPreviewRaw: the start of the body itself.
	qPreviewRaw = `SELECT substr(CAST(body AS BLOB), 1, ?3) FROM messages WHERE conversation_id = ?1 AND seq = ?2`
)

// ifObject is expr when the json_each row t is an object, else NULL: the
// value of another row is not JSON text (a string's is the string).
func ifObject(t, expr string) string {
	return "CASE WHEN " + t + ".type = 'object' THEN " + expr + " END"
}

// readPreview fills in the preview of p's body, too large to read whole,
// in tx.
func readPreview(ctx context.Context, tx *sql.Tx, conv string, p *MessagePreview, text int) error {
	ok, calls, parts, err := readMembers(ctx, tx, conv, p, text)
	if err == nil && ok && parts {
		var bad int64
		err = tx.QueryRowContext(ctx, qPreviewBadParts, conv, p.Seq, text).Scan(&bad)
		ok = bad == 0
	}
	if err == nil && ok && calls {
		p.ToolCalls, ok, err = readCalls(ctx, tx, conv, p.Seq, text)
	}
	if err != nil {
		return err
	}
	if ok {
		p.Decoded = true
		return nil
	}
	*p = MessagePreview{Seq: p.Seq, Time: p.Time, Role: p.Role, Size: p.Size}
	return tx.QueryRowContext(ctx, qPreviewRaw, conv, p.Seq, text).Scan(&p.Content)
}

// readMembers reads the top-level members of p's body into p. ok is false
// when the body is not of a message's shape; calls and parts tell whether
// it has tool calls and parts to read.
func readMembers(ctx context.Context, tx *sql.Tx, conv string, p *MessagePreview, text int) (ok, calls, parts bool, err error) {
	rows, err := tx.QueryContext(ctx, qPreviewMembers, conv, p.Seq, text)
	if err != nil {
		return false, false, false, err
	}
	defer rows.Close()
	ok = true
	for rows.Next() {
		var (
			key      any
			typ      string
			textPart sql.NullString
		)
		if err := rows.Scan(&key, &typ, &textPart); err != nil {
			return false, false, false, err
		}
		name, isName := key.(string)
		if !isName { // an array or a scalar, not an object
			ok = false
			continue
		}
		types, known := previewMembers[name]
		if !known {
			for m := range previewMembers {
				if strings.EqualFold(m, name) {
					ok = false // decoding would take it for m
				}
			}
			continue
		}
		if typ != "null" && !slices.Contains(types, typ) {
			ok = false
			continue
		}
		// A later member of the same name replaces an earlier one, as
		// encoding/json does.
		switch name {
		case "content":
			p.Content = textPart.String
		case "name":
			p.Name = textPart.String
		case "is_error":
			p.IsError = typ == "true"
		case "tool_calls":
			calls = typ == "array"
		case "parts":
			parts = typ == "array"
		}
	}
	return ok, calls, parts, rows.Err()
}

// readCalls reads the tool calls of message seq; ok is false when one is
// not of a call's shape.
func readCalls(ctx context.Context, tx *sql.Tx, conv string, seq int64, text int) (out []CallPreview, ok bool, err error) {
	rows, err := tx.QueryContext(ctx, qPreviewCalls, conv, seq, text)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	ok = true
	for rows.Next() {
		var (
			typ            string
			id, name, aerr sql.NullString // JSON types
			nameText, args sql.NullString
		)
		if err := rows.Scan(&typ, &id, &name, &aerr, &nameText, &args); err != nil {
			return nil, false, err
		}
		for _, t := range []sql.NullString{id, name, aerr} {
			if t.Valid && t.String != "text" && t.String != "null" {
				ok = false
			}
		}
		if typ != "object" && typ != "null" {
			ok = false
		}
		out = append(out, CallPreview{Name: nameText.String, Arguments: args.String})
	}
	return out, ok, rows.Err()
}

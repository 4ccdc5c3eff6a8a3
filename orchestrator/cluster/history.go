package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/persistence/libsqlhttp"

	"github.com/evoclaw/evoclaw/persistence"
)

// maxLoadMessages bounds the messages LoadMessages reads of one
// conversation (a conversation's context is far smaller in practice).
const maxLoadMessages = 100_000

// sharedSchema is the table of conversation histories every node reads
// and appends to: the one state a conversation needs to continue on
// another node.
const sharedSchema = `CREATE TABLE IF NOT EXISTS cluster_messages (
	conversation_id TEXT NOT NULL,
	seq INTEGER NOT NULL,
	time_ns INTEGER NOT NULL,
	role TEXT NOT NULL,
	body TEXT NOT NULL,
	node TEXT NOT NULL,
	PRIMARY KEY (conversation_id, seq)
)`

// SharedHistory keeps conversation histories in the cluster's libSQL
// server (sqld). It implements persistence.ConversationStore.
type SharedHistory struct {
	db   *sql.DB
	node string

	schemaMu sync.Mutex
	schemaOK bool

	// pruned is when each job's old claims were last deleted.
	pruneMu sync.Mutex
	pruned  map[string]time.Time
}

var _ persistence.ConversationStore = (*SharedHistory)(nil)

// OpenSharedHistory opens the history at url for node (recorded with each
// message it appends); token, when set, is the server's JWT. It does not
// contact the server.
func OpenSharedHistory(url, token, node string) (*SharedHistory, error) {
	// Bounded as the audit cold tier is (persistence/libsqlhttp): this
	// server too sits on the network. The largest answer asked for is
	// LoadMessages': maxLoadMessages+1 rows of 4 columns.
	conn, err := libsqlhttp.Open(url, token, libsqlhttp.Limits{MaxAnswerValues: libsqlhttp.ValuesForRows(maxLoadMessages+1, 4)})
	if err != nil {
		return nil, fmt.Errorf("cluster state %s: %w", url, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	return &SharedHistory{db: db, node: node}, nil
}

// Close releases the connections.
func (h *SharedHistory) Close() error { return h.db.Close() }

// ensureSchema creates the table once per process.
func (h *SharedHistory) ensureSchema(ctx context.Context) error {
	h.schemaMu.Lock()
	defer h.schemaMu.Unlock()
	if h.schemaOK {
		return nil
	}
	for _, stmt := range []string{sharedSchema, jobClaimsSchema, sharedJobsSchema} {
		if _, err := h.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("cluster state: create table: %w", err)
		}
	}
	h.schemaOK = true
	return nil
}

// AppendMessages implements persistence.ConversationStore: one
// transaction, so two nodes appending at once (an owner change in the
// middle of a chat) never interleave inside a batch; the primary key
// refuses a seq taken meanwhile.
func (h *SharedHistory) AppendMessages(ctx context.Context, id string, msgs []persistence.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	for i := range msgs {
		if err := msgs[i].Validate(id); err != nil {
			return err
		}
	}
	if err := h.ensureSchema(ctx); err != nil {
		return err
	}
	return retryBusy(ctx, func() error { return h.append(ctx, id, msgs) })
}

// retryBusy runs f until it does not find the database locked by another
// writer (another node, the audit cold tier shipping to the same sqld),
// a little later each time, within ctx and maxBusyAttempts.
func retryBusy(ctx context.Context, f func() error) error {
	wait := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || !busy(err) || attempt == maxBusyAttempts {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up waiting: %w)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// maxBusyAttempts bounds the tries of an append that finds the database
// locked (about 4 s of waiting in all).
const maxBusyAttempts = 25

// busy reports whether err is SQLite's "database is locked" (SQLITE_BUSY)
// as the server reports it.
func busy(err error) bool {
	s := err.Error()
	return strings.Contains(s, "database is locked") || strings.Contains(s, "SQLITE_BUSY")
}

// append is one attempt of AppendMessages.
func (h *SharedHistory) append(ctx context.Context, id string, msgs []persistence.Message) (err error) {
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cluster state: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM cluster_messages WHERE conversation_id = ?`, id).Scan(&last); err != nil {
		return fmt.Errorf("cluster state: last seq of %s: %w", id, err)
	}
	now := time.Now().UTC()
	for i := range msgs {
		m := &msgs[i]
		if m.Time.IsZero() {
			m.Time = now
		}
		m.Time = m.Time.UTC()
		m.ConversationID, m.Seq = id, last+int64(i)+1
		if _, err := tx.ExecContext(ctx, `INSERT INTO cluster_messages (conversation_id, seq, time_ns, role, body, node) VALUES (?, ?, ?, ?, ?, ?)`,
			id, m.Seq, m.Time.UnixNano(), m.Role, string(m.Body), h.node); err != nil {
			return fmt.Errorf("cluster state: append to %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cluster state: commit %s: %w", id, err)
	}
	return nil
}

// LoadMessages implements persistence.ConversationStore.
func (h *SharedHistory) LoadMessages(ctx context.Context, id string) ([]persistence.Message, error) {
	out, err := h.load(ctx, id, `SELECT seq, time_ns, role, body FROM cluster_messages WHERE conversation_id = ? ORDER BY seq LIMIT ?`,
		maxLoadMessages+1)
	if err == nil && len(out) > maxLoadMessages {
		return nil, fmt.Errorf("cluster state: conversation %s has more than %d messages", id, maxLoadMessages)
	}
	return out, err
}

// RecentMessages returns the newest limit messages of conversation id in
// Seq order (all when it has fewer; none for an unknown one), as
// sqlite.Store.RecentMessages does: a waking conversation reads the end
// of its history, not all of it. limit must be positive.
func (h *SharedHistory) RecentMessages(ctx context.Context, id string, limit int) ([]persistence.Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("cluster state: load %s: limit %d, want > 0", id, limit)
	}
	out, err := h.load(ctx, id, `SELECT seq, time_ns, role, body FROM (
		SELECT seq, time_ns, role, body FROM cluster_messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`, limit)
	if out == nil && err == nil {
		out = []persistence.Message{} // an empty history, not an absent one
	}
	return out, err
}

// load runs q, which selects seq, time_ns, role and body of conversation
// id's messages in Seq order, with id and limit.
func (h *SharedHistory) load(ctx context.Context, id, q string, limit int) ([]persistence.Message, error) {
	if err := h.ensureSchema(ctx); err != nil {
		return nil, err
	}
	rows, err := h.db.QueryContext(ctx, q, id, limit)
	if err != nil {
		return nil, fmt.Errorf("cluster state: load %s: %w", id, err)
	}
	defer rows.Close()
	var out []persistence.Message
	for rows.Next() {
		var m persistence.Message
		var ns int64
		var body string
		if err := rows.Scan(&m.Seq, &ns, &m.Role, &body); err != nil {
			return nil, fmt.Errorf("cluster state: load %s: %w", id, err)
		}
		m.ConversationID, m.Time, m.Body = id, time.Unix(0, ns).UTC(), []byte(body)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster state: load %s: %w", id, err)
	}
	return out, nil
}

// Conversations implements persistence.ConversationStore.
func (h *SharedHistory) Conversations(ctx context.Context, limit int) ([]persistence.ConversationInfo, error) {
	if err := h.ensureSchema(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := h.db.QueryContext(ctx, `SELECT conversation_id, MIN(time_ns), MAX(time_ns), MAX(seq) FROM cluster_messages
		GROUP BY conversation_id ORDER BY MAX(time_ns) DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("cluster state: conversations: %w", err)
	}
	defer rows.Close()
	var out []persistence.ConversationInfo
	for rows.Next() {
		var c persistence.ConversationInfo
		var first, last int64
		if err := rows.Scan(&c.ID, &first, &last, &c.MessageCount); err != nil {
			return nil, fmt.Errorf("cluster state: conversations: %w", err)
		}
		c.FirstTime, c.LastTime = time.Unix(0, first).UTC(), time.Unix(0, last).UTC()
		out = append(out, c)
	}
	return out, errors.Join(rows.Err())
}

// pruneBatch is how many conversations one statement of PruneHistory
// deletes at most.
const pruneBatch = 100

// PruneHistory deletes every conversation whose newest message is older
// than cutoff, whole: a conversation is never left with a gap at its
// start, and one appended to meanwhile keeps every message. It walks
// the conversations in id order, pruneBatch at a time, until it reaches
// the end or ctx ends, and returns the messages it deleted.
func (h *SharedHistory) PruneHistory(ctx context.Context, cutoff time.Time) (int64, error) {
	if err := h.ensureSchema(ctx); err != nil {
		return 0, err
	}
	var deleted int64
	after := ""
	for {
		ids, err := h.staleConversations(ctx, after, cutoff)
		if err != nil || len(ids) == 0 {
			return deleted, err
		}
		after = ids[len(ids)-1]
		list, err := json.Marshal(ids)
		if err != nil {
			return deleted, err
		}
		var n int64
		err = retryBusy(ctx, func() error {
			res, err := h.db.ExecContext(ctx, `DELETE FROM cluster_messages
				WHERE conversation_id IN (SELECT value FROM json_each(?1))
				AND conversation_id NOT IN (SELECT conversation_id FROM cluster_messages
					WHERE conversation_id IN (SELECT value FROM json_each(?1)) AND time_ns >= ?2)`,
				string(list), cutoff.UnixNano())
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return deleted, fmt.Errorf("cluster state: delete old conversations: %w", err)
		}
		deleted += n
		if len(ids) < pruneBatch {
			return deleted, nil
		}
	}
}

// staleConversations lists, in id order, up to pruneBatch conversations
// after the id after whose newest message is older than cutoff.
func (h *SharedHistory) staleConversations(ctx context.Context, after string, cutoff time.Time) ([]string, error) {
	rows, err := h.db.QueryContext(ctx, `SELECT conversation_id FROM cluster_messages WHERE conversation_id > ?
		GROUP BY conversation_id HAVING MAX(time_ns) < ? ORDER BY conversation_id LIMIT ?`, after, cutoff.UnixNano(), pruneBatch)
	if err != nil {
		return nil, fmt.Errorf("cluster state: list old conversations: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("cluster state: list old conversations: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster state: list old conversations: %w", err)
	}
	return ids, nil
}

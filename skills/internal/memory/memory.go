// Package memory provides the design's memory_write and memory_read
// tools: durable notes an agent keeps for itself, with full-text search,
// in a SQLite file of its own data directory (not the audit database,
// whose rows form a hash chain). Notes survive restarts; the calls are
// audited like every tool call.
//
// Search uses SQLite's FTS5, compiled into modernc.org/sqlite; results
// are ranked by bm25. The store is bounded in notes and bytes per note;
// a full store refuses new notes with ErrFull until some are deleted.
//
// # Concurrency
//
// A Store is safe for concurrent use. Close is idempotent.
package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Defaults and bounds of a Store.
const (
	// DefaultMaxNotes is how many notes a store holds.
	DefaultMaxNotes = 10_000
	// MaxNoteBytes is the longest note.
	MaxNoteBytes = 8 << 10
	// MaxTopicBytes is the longest topic.
	MaxTopicBytes = 100
	// defaultReadLimit and maxReadLimit bound memory_read.
	defaultReadLimit = 10
	maxReadLimit     = 50
)

// ErrFull means the store holds its maximum of notes.
var ErrFull = errors.New("memory is full")

// ErrNoNote means no note has the given id.
var ErrNoNote = errors.New("no such note")

// Note is one durable note.
type Note struct {
	ID      int64
	Topic   string
	Content string
	Updated time.Time
}

// Store is the notes of one agent in a SQLite file.
type Store struct {
	db       *sql.DB
	maxNotes int

	mu     sync.Mutex // guards closed; writes are serialized by the single connection
	closed bool
}

const schema = `
CREATE TABLE IF NOT EXISTS notes (
	id      INTEGER PRIMARY KEY,
	topic   TEXT NOT NULL DEFAULT '',
	content TEXT NOT NULL,
	updated TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(topic, content, content='notes', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS notes_ai AFTER INSERT ON notes BEGIN
	INSERT INTO notes_fts(rowid, topic, content) VALUES (new.id, new.topic, new.content);
END;
CREATE TRIGGER IF NOT EXISTS notes_ad AFTER DELETE ON notes BEGIN
	INSERT INTO notes_fts(notes_fts, rowid, topic, content) VALUES ('delete', old.id, old.topic, old.content);
END;
CREATE TRIGGER IF NOT EXISTS notes_au AFTER UPDATE ON notes BEGIN
	INSERT INTO notes_fts(notes_fts, rowid, topic, content) VALUES ('delete', old.id, old.topic, old.content);
	INSERT INTO notes_fts(rowid, topic, content) VALUES (new.id, new.topic, new.content);
END;`

// Open opens (creating) the store at path. maxNotes <= 0 means
// DefaultMaxNotes.
func Open(path string, maxNotes int) (*Store, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("open memory %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open memory %s: %w", path, err)
	}
	if maxNotes <= 0 {
		maxNotes = DefaultMaxNotes
	}
	return &Store{db: db, maxNotes: maxNotes}, nil
}

// Close closes the database; it is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// Write stores a new note, or replaces note id (> 0), and returns its id.
func (s *Store) Write(ctx context.Context, id int64, topic, content string) (int64, error) {
	now := time.Now().UTC().Format(time.RFC3339)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() // after Commit, a no-op
	if id > 0 {
		res, err := tx.ExecContext(ctx, `UPDATE notes SET topic = ?, content = ?, updated = ? WHERE id = ?`, topic, content, now, id)
		if err != nil {
			return 0, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return 0, fmt.Errorf("%w: %d", ErrNoNote, id)
		}
		return id, tx.Commit()
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil {
		return 0, err
	}
	if n >= s.maxNotes {
		return 0, fmt.Errorf("%w: %d notes", ErrFull, n)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO notes(topic, content, updated) VALUES (?, ?, ?)`, topic, content, now)
	if err != nil {
		return 0, err
	}
	if id, err = res.LastInsertId(); err != nil {
		return 0, err
	}
	return id, tx.Commit()
}

// Delete removes note id.
func (s *Store) Delete(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM notes WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %d", ErrNoNote, id)
	}
	return nil
}

// Search returns at most limit notes: those matching query (any of its
// words, best first) or, for an empty query, the most recent; only of
// topic when it is set.
func (s *Store) Search(ctx context.Context, query, topic string, limit int) ([]Note, error) {
	var rows *sql.Rows
	var err error
	if q := ftsQuery(query); q != "" {
		rows, err = s.db.QueryContext(ctx, `SELECT n.id, n.topic, n.content, n.updated FROM notes_fts f JOIN notes n ON n.id = f.rowid
			WHERE notes_fts MATCH ? AND (? = '' OR n.topic = ?) ORDER BY bm25(notes_fts) LIMIT ?`, q, topic, topic, limit)
	} else {
		rows, err = s.db.QueryContext(ctx, `SELECT id, topic, content, updated FROM notes WHERE ? = '' OR topic = ?
			ORDER BY updated DESC, id DESC LIMIT ?`, topic, topic, limit)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		var n Note
		var upd string
		if err := rows.Scan(&n.ID, &n.Topic, &n.Content, &upd); err != nil {
			return nil, err
		}
		n.Updated, _ = time.Parse(time.RFC3339, upd)
		out = append(out, n)
	}
	return out, rows.Err()
}

// ftsQuery turns free text into an FTS5 query: each word quoted (so no
// word is taken as syntax), any of them matching.
func ftsQuery(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		words[i] = `"` + w + `"`
	}
	if len(words) > 32 {
		words = words[:32]
	}
	return strings.Join(words, " OR ")
}

// Tools returns memory_write and memory_read over s, each requiring the
// memory permission.
func Tools(s *Store) []skills.GoTool {
	write := skills.GoTool{
		Tool: skills.Tool{
			Name: "memory_write",
			Description: fmt.Sprintf("Save a durable note to your long-term memory (it survives restarts), to find later with memory_read. "+
				"Give id to replace that note, or id with delete=true to remove it. Notes are at most %d KiB.", MaxNoteBytes>>10),
			Parameters: skills.Parameters{Properties: map[string]skills.Param{
				"content": {Type: skills.TypeString, Description: "The note"},
				"topic":   {Type: skills.TypeString, Description: "A short label to group notes (optional)"},
				"id":      {Type: skills.TypeInteger, Description: "The note to replace or delete"},
				"delete":  {Type: skills.TypeBoolean, Description: "Delete note id instead (default false)"},
			}},
			Permissions: []string{skills.PermMemory},
		},
		Run: func(ctx context.Context, args map[string]any) skills.Output {
			content, _ := args["content"].(string)
			topic, _ := args["topic"].(string)
			id := integer(args["id"])
			if args["delete"] == true {
				if id <= 0 {
					return skills.Failed(wire.ErrInvalidParams, "memory_write: delete needs the id of a note")
				}
				if err := s.Delete(ctx, id); err != nil {
					return failure("memory_write", err)
				}
				return skills.Output{Content: []skills.Block{skills.TextBlock(fmt.Sprintf("deleted note %d", id))}}
			}
			content = strings.TrimSpace(content)
			switch {
			case content == "":
				return skills.Failed(wire.ErrInvalidParams, "memory_write: content is empty")
			case len(content) > MaxNoteBytes:
				return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("memory_write: the note is %d bytes, at most %d", len(content), MaxNoteBytes))
			case len(topic) > MaxTopicBytes:
				return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("memory_write: topic is %d bytes, at most %d", len(topic), MaxTopicBytes))
			}
			id, err := s.Write(ctx, id, strings.TrimSpace(topic), content)
			if err != nil {
				return failure("memory_write", err)
			}
			return skills.Output{Content: []skills.Block{skills.TextBlock(fmt.Sprintf("saved note %d", id))}}
		},
	}
	read := skills.GoTool{
		Tool: skills.Tool{
			Name:        "memory_read",
			Description: "Search your long-term memory: notes matching any word of query, best first; without query, the most recent notes.",
			Parameters: skills.Parameters{Properties: map[string]skills.Param{
				"query": {Type: skills.TypeString, Description: "Words to search for"},
				"topic": {Type: skills.TypeString, Description: "Only notes of this topic"},
				"limit": {Type: skills.TypeInteger, Description: fmt.Sprintf("How many notes (default %d, at most %d)", defaultReadLimit, maxReadLimit)},
			}},
			Permissions: []string{skills.PermMemory},
		},
		Run: func(ctx context.Context, args map[string]any) skills.Output {
			query, _ := args["query"].(string)
			topic, _ := args["topic"].(string)
			limit := int(integer(args["limit"]))
			if limit <= 0 {
				limit = defaultReadLimit
			}
			notes, err := s.Search(ctx, query, topic, min(limit, maxReadLimit))
			if err != nil {
				return failure("memory_read", err)
			}
			if len(notes) == 0 {
				return skills.Output{Content: []skills.Block{skills.TextBlock("no notes found")}}
			}
			var b strings.Builder
			for _, n := range notes {
				label := ""
				if n.Topic != "" {
					label = " [" + n.Topic + "]"
				}
				fmt.Fprintf(&b, "#%d%s %s\n%s\n\n", n.ID, label, n.Updated.Format("2006-01-02 15:04"), n.Content)
			}
			return skills.Output{Content: []skills.Block{skills.TextBlock(strings.TrimSpace(b.String()))}}
		},
	}
	return []skills.GoTool{write, read}
}

func failure(tool string, err error) skills.Output {
	code := wire.ErrExecutionFailed
	switch {
	case errors.Is(err, ErrNoNote):
		code = wire.ErrNotFound
	case errors.Is(err, ErrFull):
		return skills.Failed(code, fmt.Sprintf("%s: %v; delete notes you no longer need (memory_write with id and delete=true)", tool, err))
	}
	return skills.Failed(code, fmt.Sprintf("%s: %v", tool, err))
}

// integer reads an integer argument as JSON or TOML decoding gives it.
func integer(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	}
	return 0
}

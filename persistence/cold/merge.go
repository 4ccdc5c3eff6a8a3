package cold

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/libsqlhttp"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// mergePage is how many cold rows MergeTiers fetches per request.
const mergePage = 2000

// MergeTiers builds, in dir, a SQLite database with the warm schema holding
// the records of the warm database at warmPath and of the cold tier c,
// without duplicates (a record_id present in both is taken once, from
// warm), and returns its path. conversations is rebuilt from the merged
// messages. Queries then run on it read-only (sqlite.QueryReadOnly), so
// `audit sql --tier all` answers over both tiers with plain SQL. It copies
// every record: its cost grows with the size of both tiers.
func MergeTiers(ctx context.Context, warmPath string, c *Store, dir string) (string, error) {
	dst := filepath.Join(dir, "merged.db")
	st, err := sqlite.Open(dst, sqlite.Options{}) // creates the current warm schema
	if err != nil {
		return "", fmt.Errorf("merge tiers: %w", err)
	}
	if err := st.Close(); err != nil {
		return "", fmt.Errorf("merge tiers: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+dst)
	if err != nil {
		return "", fmt.Errorf("merge tiers: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := mergeableMessages(ctx, db); err != nil {
		return "", fmt.Errorf("merge tiers: %w", err)
	}
	// The merged database holds every node's chain, told apart by
	// chain_id as in the cold tier; chain_seq is unique per chain only.
	for _, t := range auditchain.Tables {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("DROP INDEX %s_chain_seq; ALTER TABLE %s ADD COLUMN chain_id TEXT; CREATE INDEX %s_chain ON %s(chain_id, chain_seq)",
			t.Name, t.Name, t.Name, t.Name)); err != nil {
			return "", fmt.Errorf("merge tiers: prepare %s: %w", t.Name, err)
		}
	}
	if err := copyWarm(ctx, db, warmPath); err != nil {
		return "", fmt.Errorf("merge tiers: warm: %w", err)
	}
	if c != nil {
		if err := copyCold(ctx, db, c); err != nil {
			return "", fmt.Errorf("merge tiers: cold: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM conversations;
		INSERT INTO conversations (conversation_id, first_ts, first_ms, last_ts, last_ms, message_count)
		SELECT conversation_id, min(ts), min(ts_ms), max(ts), max(ts_ms), max(seq) FROM messages GROUP BY conversation_id`); err != nil {
		return "", fmt.Errorf("merge tiers: rebuild conversations: %w", err)
	}
	// The reports read the summaries of the warm schema: build them over
	// the merged records.
	if err := sqlite.RebuildSummaries(ctx, db); err != nil {
		return "", fmt.Errorf("merge tiers: %w", err)
	}
	return dst, nil
}

// copyWarm copies the chained tables of the warm database, attached
// read-only, into db.
func copyWarm(ctx context.Context, db *sql.DB, warmPath string) error {
	abs, err := filepath.Abs(warmPath)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro"}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS warm", u.String()); err != nil {
		return fmt.Errorf("attach %s read-only: %w", warmPath, err)
	}
	defer conn.ExecContext(context.Background(), "DETACH DATABASE warm")
	// Conversation summaries must exist before their messages (foreign key).
	if _, err := conn.ExecContext(ctx, `INSERT OR IGNORE INTO conversations SELECT * FROM warm.conversations`); err != nil {
		return fmt.Errorf("copy conversations: %w", err)
	}
	for _, t := range auditchain.Tables {
		cols := strings.Join(append(append([]string(nil), t.Columns...), auditchain.ColHash), ", ")
		// A warm copy from before an optional column existed reads it as NULL.
		from, err := auditchain.SelectList(ctx, conn, t, "warm."+t.Name)
		if err != nil {
			return err
		}
		q := fmt.Sprintf("INSERT OR IGNORE INTO main.%s (%s, chain_id) SELECT %s, %s, (SELECT value FROM warm.audit_meta WHERE key = 'chain_id') FROM warm.%s",
			t.Name, cols, strings.Join(from, ", "), auditchain.ColHash, t.Name)
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("copy %s: %w", t.Name, err)
		}
	}
	return nil
}

// copyCold pages through the cold tables by record_id and inserts what
// warm did not have.
func copyCold(ctx context.Context, db *sql.DB, c *Store) error {
	if err := c.EnsureSchema(ctx); err != nil {
		return err
	}
	for _, t := range auditchain.Tables {
		cols := append(append([]string(nil), t.Columns...), auditchain.ColHash, "chain_id")
		list := strings.Join(cols, ", ")
		ins := fmt.Sprintf("INSERT OR IGNORE INTO %s (%s) VALUES (%s)", t.Name, list, strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "))
		after, n := "", mergePage
		for {
			page, err := c.page(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE record_id > ? ORDER BY record_id LIMIT %d", list, t.Name, n), after, len(cols))
			if errors.Is(err, libsqlhttp.ErrAnswerTooLarge) && n > 1 {
				// Large records (images in messages): fewer per page, so
				// that each answer stays within max_answer_bytes.
				n /= 2
				continue
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", t.Name, err)
			}
			if len(page) == 0 {
				break
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			for _, row := range page {
				if t.Name == "messages" {
					// The foreign key needs the conversation's summary row;
					// its content is rebuilt at the end.
					if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO conversations VALUES (?, '', 0, '', 0, 0)`, row[1]); err != nil {
						tx.Rollback()
						return err
					}
				}
				if _, err := tx.ExecContext(ctx, ins, row...); err != nil {
					tx.Rollback()
					return fmt.Errorf("insert %s %v: %w", t.Name, row[0], err)
				}
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			after, _ = page[len(page)-1][0].(string)
		}
	}
	return nil
}

// page runs one query on the cold tier and returns its rows.
func (s *Store) page(ctx context.Context, q string, arg any, ncols int) ([][]any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, q, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		row := make([]any, ncols)
		ptrs := make([]any, ncols)
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// seqUnique is the warm schema's constraint that no two messages of a
// conversation share a Seq.
var seqUnique = regexp.MustCompile(`,\s*UNIQUE\s*\(\s*conversation_id\s*,\s*seq\s*\)`)

// mergeableMessages rebuilds the merged database's messages table without
// the warm schema's UNIQUE(conversation_id, seq). It holds in one
// database, but not across the records the tiers merge: two nodes' chains
// may hold a conversation of the same name, and a conversation whose
// messages retention deleted starts again at Seq 1 when it continues.
// With the constraint, INSERT OR IGNORE dropped every such message but
// the first from the merged view; a record is told apart by its
// record_id, which stays unique. Reads by conversation keep an index.
func mergeableMessages(ctx context.Context, db *sql.DB) error {
	var table string
	if err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'messages'`).Scan(&table); err != nil {
		return fmt.Errorf("read the messages table's schema: %w", err)
	}
	if !seqUnique.MatchString(table) {
		return fmt.Errorf("the messages table's schema lacks UNIQUE(conversation_id, seq): %s", table)
	}
	indexes, err := db.QueryContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("read the messages table's indexes: %w", err)
	}
	var recreate []string
	for indexes.Next() {
		var q string
		if err := indexes.Scan(&q); err != nil {
			indexes.Close()
			return fmt.Errorf("read the messages table's indexes: %w", err)
		}
		recreate = append(recreate, q)
	}
	indexes.Close()
	if err := indexes.Err(); err != nil {
		return fmt.Errorf("read the messages table's indexes: %w", err)
	}
	stmts := append([]string{`ALTER TABLE messages RENAME TO messages_seq_unique`, seqUnique.ReplaceAllString(table, ""),
		`DROP TABLE messages_seq_unique`}, recreate...)
	stmts = append(stmts, `CREATE INDEX messages_conversation_seq ON messages(conversation_id, seq)`)
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("rebuild messages without UNIQUE(conversation_id, seq): %q: %w", q, err)
		}
	}
	return nil
}

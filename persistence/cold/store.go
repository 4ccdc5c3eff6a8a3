package cold

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/evoclaw/evoclaw/persistence/libsqlhttp"
)

// Sentinel errors of the cold tier.
var (
	// ErrSchemaTooNew reports a cold database written by a newer evoclaw.
	ErrSchemaTooNew = errors.New("cold audit schema is newer than this build")
	// ErrReadOnly reports a statement given to Query that tried to write.
	ErrReadOnly = errors.New("the cold audit database is read-only here")
)

// Store is a connection to the cold tier. Opening it does not contact the
// server, so a node starts while offline; the schema is created by the
// first call that needs it.
type Store struct {
	cfg Config
	db  *sql.DB

	schemaMu sync.Mutex // guards schemaOK
	schemaOK bool
}

// Open returns a Store for cfg (see Config for defaults). It validates cfg
// but does not contact the server.
func Open(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open cold tier: %w", err)
	}
	connector, err := libsqlhttp.Open(cfg.URL, cfg.AuthToken, libsqlhttp.Limits{
		MaxAnswerBytes: cfg.MaxAnswerBytes, RequestTimeout: cfg.RequestTimeout,
	})
	if err != nil {
		// The connector's errors name the URL and options, never the token.
		return nil, fmt.Errorf("open cold tier %s: %w", cfg.URL, err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(4)
	return &Store{cfg: cfg, db: db}, nil
}

// URL returns the cold database's URL (it holds no secret).
func (s *Store) URL() string { return s.cfg.URL }

// Close releases the Store's connections. It is idempotent.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close cold tier: %w", err)
	}
	return nil
}

// HasSummaries reports whether the cold database keeps the report
// summaries (cold schema SummariesVersion and later), so that a report's
// Query runs on it; on an older one (not yet upgraded by a shipper of
// this build) run its Raw query. It only reads: a read-only token will do.
func (s *Store) HasSummaries(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var version int
	err := s.db.QueryRowContext(ctx, `SELECT CAST(value AS INTEGER) FROM schema_meta WHERE key = 'version'`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err != nil && strings.Contains(err.Error(), "no such table")):
		return false, nil // nothing shipped yet
	case err != nil:
		return false, fmt.Errorf("read cold schema version: %w", classifyColdError(err))
	}
	return version >= SummariesVersion, nil
}

// EnsureSchema creates the cold tables when they are missing.
func (s *Store) EnsureSchema(ctx context.Context) error {
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if s.schemaOK {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	if err := ensureSchema(ctx, s.db); err != nil {
		return err
	}
	s.schemaOK = true
	return nil
}

// recheckSchema makes the next EnsureSchema look at the server again. The
// shipper calls it after a failure: the database may have been replaced
// by an empty one (recreated, restored from an older copy) while this
// Store believed its tables were there.
func (s *Store) recheckSchema() {
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	s.schemaOK = false
}

// inTx runs fn on one connection inside BEGIN ... COMMIT, or ROLLBACK when
// commit is false, every statement bounded by ctx. The driver's own
// transactions end with no deadline at all (its Commit and Rollback take no
// context), so a server that stops answering would hang them. When fn or
// the end fails, the connection is dropped rather than pooled: closing its
// stream makes the server roll back whatever is left open.
func inTx(ctx context.Context, db *sql.DB, commit bool, fn func(conn *sql.Conn) error) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	if err := fn(conn); err != nil {
		return err
	}
	end := "ROLLBACK"
	if commit {
		end = "COMMIT"
	}
	_, err = conn.ExecContext(ctx, end)
	return err
}

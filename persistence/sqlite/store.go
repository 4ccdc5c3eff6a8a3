package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/hot"
)

// Sync modes for Options.Sync.
const (
	// SyncNormal runs WAL with synchronous=NORMAL: commits survive a crash
	// of the process, a power cut may lose the last ones.
	SyncNormal = "normal"
	// SyncFull runs WAL with synchronous=FULL: every commit is fsynced.
	SyncFull = "full"
)

// Defaults for the zero fields of Options.
const (
	DefaultSync        = SyncNormal      // durable across process crashes
	DefaultBusyTimeout = 5 * time.Second // wait for another connection's lock
	DefaultMaxBatch    = 256             // writes per transaction
	DefaultQueueLen    = 4096            // writes waiting for the writer
	// DefaultLinger is how long queued writes nobody waits for wait for
	// one somebody does, to share its commit (writer.go).
	DefaultLinger = 10 * time.Millisecond
	// DefaultRequestLogBytes bounds the reports the request log holds
	// (Options.RequestLogBytes): 128 results of 512 KiB, several minutes
	// of a busy agent's calls.
	DefaultRequestLogBytes = 64 << 20
)

// Sentinel errors of the store.
var (
	// ErrClosed is returned by calls made after Close.
	ErrClosed = errors.New("audit store is closed")
	// ErrQueueFull is returned when the write queue holds Options.QueueLen
	// pending writes; the write was not accepted.
	ErrQueueFull = errors.New("audit write queue is full")
	// ErrInvalidOptions reports an Options value Open cannot use.
	ErrInvalidOptions = errors.New("invalid audit store options")
	// ErrSchemaTooNew reports a database written by a newer evoclaw whose
	// schema this build does not know.
	ErrSchemaTooNew = errors.New("audit database schema is newer than this build")
	// ErrInUse reports a database another process holds open for
	// writing (lock_unix.go).
	ErrInUse = errors.New("audit database is in use")
	// ErrReadOnly reports a statement given to QueryReadOnly that tried to
	// change the database or open another one.
	ErrReadOnly = errors.New("the audit database is read-only")
	// ErrNotOneStatement reports a QueryReadOnly query that is empty or
	// holds more than one SQL statement.
	ErrNotOneStatement = errors.New("query must be exactly one SQL statement")
	// ErrTooManyRows reports a QueryReadOnly query producing more than
	// MaxQueryRows rows.
	ErrTooManyRows = errors.New("query result too large")
	// ErrDiskFull reports a write that failed because the disk (or the
	// file system holding the database) is full. Nothing of the failed
	// transaction was stored; writes succeed again once space is freed.
	ErrDiskFull = errors.New("audit database disk is full")
	// errEmptyRequestID rejects a request log call without an id.
	errEmptyRequestID = errors.New("empty request id")
)

// Log keys used by the store.
const (
	logKeyComponent = "component"
	logKeyPath      = "path"
	logKeySync      = "sync"
	logKeyErr       = "err"
	logKeyBatch     = "batch"
)

// Options configures a Store. The zero value is ready for use.
type Options struct {
	// Sync is SyncNormal or SyncFull. Empty means DefaultSync.
	Sync string
	// BusyTimeout is how long a statement waits for a lock held by another
	// connection before failing. Zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// MaxBatch is the most writes committed in one transaction. Zero means
	// DefaultMaxBatch.
	MaxBatch int
	// QueueLen is the most writes waiting for the writer; beyond it calls
	// fail with ErrQueueFull. Zero means DefaultQueueLen.
	QueueLen int
	// Linger is the longest a queued write (one whose caller does not
	// wait for its commit: QueueToolCall, QueueLLMCall)
	// is held for a write somebody waits for, whose commit it then
	// shares. Zero means DefaultLinger; negative commits queued writes at
	// once.
	Linger time.Duration
	// Logger receives the store's diagnostics. Nil means they are discarded.
	Logger *slog.Logger
	// KeyFile is the file holding the key that authenticates the hash
	// chain's checkpoints and head (created, mode 0600, for a new or
	// upgraded database). Empty means DefaultKeyFile: audit.key beside the
	// database. Keep it, or a copy, where whoever can change the database
	// cannot: see docs/AUDIT.md.
	KeyFile string
	// Ring, when set, receives every chained record (tool calls, LLM
	// calls, messages, events) once it is committed: the hot tier.
	Ring *hot.Ring
	// RequestLogBytes bounds the bytes of the reports the request log
	// holds for redelivered requests (requests.go); past it the oldest are
	// dropped, leaving a stub, and the newest is always kept. Zero means
	// DefaultRequestLogBytes; negative is invalid.
	RequestLogBytes int64
}

// withDefaults returns o with zero fields filled in, or an error saying what
// is invalid.
func (o Options) withDefaults() (Options, error) {
	switch strings.ToLower(o.Sync) {
	case "":
		o.Sync = DefaultSync
	case SyncNormal, SyncFull:
		o.Sync = strings.ToLower(o.Sync)
	default:
		return o, fmt.Errorf("%w: sync %q, allowed values are %q and %q", ErrInvalidOptions, o.Sync, SyncNormal, SyncFull)
	}
	if o.BusyTimeout < 0 || o.MaxBatch < 0 || o.QueueLen < 0 || o.RequestLogBytes < 0 {
		return o, fmt.Errorf("%w: busy timeout, max batch, queue length and request log bytes must not be negative", ErrInvalidOptions)
	}
	if o.RequestLogBytes == 0 {
		o.RequestLogBytes = DefaultRequestLogBytes
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.QueueLen == 0 {
		o.QueueLen = DefaultQueueLen
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Store is the SQLite audit trail and request log of one node. It is safe
// for concurrent use; see the package documentation for how writes are
// batched.
type Store struct {
	path   string
	opts   Options
	log    *slog.Logger
	db     *sql.DB    // the pool of the writer's one connection
	wc     *wconn     // that connection, held by the committer from Open to Close
	rdb    *sql.DB    // read-only connections for LoadMessages and other reads
	commit commitFunc // fault seam, copied from commitHook at Open

	key     auditchain.Key    // authenticates the chain's anchors (seal.go)
	chainID string            // this database's hash chain id
	chain   chainState        // committer only: the last chained record
	hasher  auditchain.Hasher // committer only: hashes records, MACs seals
	pending []hot.Entry       // committer only: entries for Ring once the transaction commits
	sums    summaryBatch      // committer only: the transaction's report summary changes (summary.go)
	health  writeHealth       // what the writer last saw, for WriteHealth
	stmts   stmtCache         // the writer's prepared statements (stmtcache.go)
	// recentStmt is RecentMessages' query for RecentPrepared messages,
	// prepared on rdb by warmReaders; nil when it did not prepare. Read it with
	// recentStatement.
	recentStmt *sql.Stmt
	// warmed is closed when warmReaders has returned.
	warmed chan struct{}
	wq     writeQueue   // writes waiting for their commit (writer.go)
	ck     checkpointer // checkpoints beside the commits (checkpoint.go)

	// keyPredates: the database was new at Open but its key file was
	// already there (KeyPredatesTrail).
	keyPredates bool
	// locks hold the database's advisory lock (lock_unix.go) until
	// Close; none where the file system has none. A database made from
	// the image (image.go) has two: the empty file's, which a process
	// that opened the path before the image replaced it would lock, and
	// the image's.
	locks []*os.File

	closeOnce sync.Once
	closeErr  error
}

var (
	_ persistence.AuditLog   = (*Store)(nil)
	_ persistence.RequestLog = (*Store)(nil)

	_ persistence.LLMCallLog        = (*Store)(nil)
	_ persistence.ConversationStore = (*Store)(nil)
	_ persistence.EventLog          = (*Store)(nil)
)

// readConns is the most read-only connections a Store keeps open.
const readConns = 2

// Open opens the store at path, creating the file (and its directory, mode
// 0700) when missing and migrating the schema to the current version.
func Open(path string, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open audit store: %w", err)
	}
	if path == "" {
		return nil, fmt.Errorf("open audit store: %w: empty path", ErrInvalidOptions)
	}
	if err := createFile(path); err != nil {
		return nil, fmt.Errorf("open audit store: %w", err)
	}
	// Before anything reads the chain's head: a second writer must not
	// start at all.
	lock, unlocked, err := lockFile(path)
	if err != nil {
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	if unlocked {
		opts.Logger.Warn("audit database not locked: the file system has no flock; make sure one process at a time writes it", logKeyPath, path)
	}
	var locks []*os.File
	if lock != nil {
		locks = append(locks, lock)
	}
	ok := false
	defer func() {
		if !ok {
			closeLocks(locks)
		}
	}()
	var keyPredates bool
	imageLock, _, err := createFromImage(path, cmp.Or(opts.KeyFile, DefaultKeyFile(path)), &keyPredates)
	if err != nil {
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	if imageLock != nil {
		locks = append(locks, imageLock)
	}
	dsn, err := writerDSN(path, opts)
	if err != nil {
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	// One connection: the committer is its only user, and the
	// per-connection PRAGMAs in the DSN then apply to every statement.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := checkWAL(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	key, chainID, chain, err := openChain(context.Background(), db, path, opts.KeyFile, &keyPredates,
		opts.Logger.With(logKeyComponent, "audit-sqlite", logKeyPath, path))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	wc, err := openWConn(context.Background(), db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	rdb, err := openReaders(path)
	if err != nil {
		wc.close()
		db.Close()
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	stmts := newStmtCache()
	s := &Store{
		path:    path,
		opts:    opts,
		log:     opts.Logger.With(logKeyComponent, "audit-sqlite", logKeyPath, path),
		db:      db,
		wc:      wc,
		rdb:     rdb,
		key:     key,
		chainID: chainID,
		chain:   chain,
		commit:  commitHook,
		stmts:   stmts,
		locks:   locks,

		keyPredates: keyPredates,
	}
	s.wq.drained = make(chan struct{})
	if err := s.startCheckpointer(dsn); err != nil {
		stmts.close()
		rdb.Close()
		wc.close()
		db.Close()
		return nil, fmt.Errorf("open audit store %s: %w", path, err)
	}
	s.warmed = make(chan struct{})
	go s.warmReaders()
	s.log.Debug("audit store open", logKeySync, opts.Sync)
	ok = true
	return s, nil
}

// warmReaders opens the first read connection, on which SQLite reads the
// whole schema, and prepares RecentMessages' statement there (a statement
// of the pool, prepared on each read connection the first time it runs
// there). It runs beside the rest of a node's start instead of inside
// Open: a tenth of a restart's CPU was the schema read twice in a row,
// the writer's then the reader's. Until it is done the pool holds one
// connection, so that a read meanwhile (at a node's start, the approvals
// left pending) waits for this one instead of opening a second and
// reading the schema there too.
func (s *Store) warmReaders() {
	defer close(s.warmed)
	if st, err := s.rdb.Prepare(qRecentPrepared); err == nil {
		s.recentStmt = st
	} else {
		s.log.Warn("prepare the read connection", logKeyErr, err)
	}
	s.rdb.SetMaxOpenConns(readConns)
	s.rdb.SetMaxIdleConns(readConns)
}

// recentStatement returns RecentMessages' prepared statement, or nil,
// once warmReaders is done.
func (s *Store) recentStatement() *sql.Stmt {
	<-s.warmed
	return s.recentStmt
}

// KeyPredatesTrail reports that Open found a new database beside an
// existing key file: the trail that key sealed before is not this one
// (deleted, moved or lost). The caller records it as the first event of
// the new trail (persistence.EventKeyPredatesTrail) and says it loudly.
// A first start cut between creating the key and the schema also leaves
// a key without a trail, and is reported the same way.
func (s *Store) KeyPredatesTrail() bool { return s.keyPredates }

// NoteKeyPredatesTrail says loudly, and as a record of the new trail
// (queued: it commits with the next commit), that the trail the key
// sealed before is missing. node and agent are the event's.
func (s *Store) NoteKeyPredatesTrail(node, agent string) {
	const msg = "the audit database is new but its key file was already there: the audit trail this key sealed before is missing (deleted, moved or lost)"
	keyFile := s.opts.KeyFile
	if keyFile == "" {
		keyFile = DefaultKeyFile(s.path)
	}
	s.log.Error(msg, "key_file", keyFile)
	b, _ := json.Marshal(map[string]string{"message": msg, "key_file": keyFile})
	failed := func(err error) {
		if err != nil {
			s.log.Error("record the missing audit trail", "err", err)
		}
	}
	if err := s.QueueEvent(persistence.Event{Node: node, AgentID: agent, Kind: persistence.EventKeyPredatesTrail, Detail: b}, failed); err != nil {
		failed(err)
	}
}

// Close stops accepting writes, commits the writes already queued, waits for
// the writer to exit and closes the database. It is safe to call more than
// once and from several goroutines; every call returns after the first has
// finished, with its result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeWriter() // commits what is queued
		cerr := s.stopCheckpointer()
		serr := errors.Join(s.stmts.close(), s.wc.close())
		if st := s.recentStatement(); st != nil {
			serr = errors.Join(serr, st.Close())
		}
		rerr := s.rdb.Close()
		// The writer's connection closes last: SQLite checkpoints the log
		// when the last connection closes.
		if err := errors.Join(cerr, serr, rerr, s.db.Close()); err != nil {
			s.closeErr = fmt.Errorf("close audit store %s: %w", s.path, err)
		}
		closeLocks(s.locks) // after the last connection: another writer may start
	})
	return s.closeErr
}

// closeLocks releases the advisory locks.
func closeLocks(locks []*os.File) {
	for _, l := range locks {
		l.Close()
	}
}

// createFile creates the parent directory (0700) and an empty database file
// (0600) when they are missing. SQLite gives the -wal and -shm files the
// permissions of the database file, so the audit trail stays private.
func createFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create audit directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create audit database file: %w", err)
	}
	return f.Close()
}

// fileURI returns path as a "file:" URI. Escaping matters twice: the driver
// cuts the DSN at the first '?', and SQLite decodes %XX in URI paths.
func fileURI(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	abs = filepath.ToSlash(abs)
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs // Windows drive letter paths: file:///C:/...
	}
	u := url.URL{Scheme: "file", Path: abs}
	return u.String(), nil
}

// writerCacheKiB bounds the writer connection's page cache. SQLite's
// default (2,000 KiB) fills as the writes touch pages and is never given
// back: on a small board that is 2 MiB of memory outside Go's heap for pages
// the OS page cache holds anyway. The writer appends: what it needs cached is
// the right edge of each table and index and the few pages a commit touches
// (docs/PERFORMANCE.md, "Scale", measures both the memory and the commits).
const writerCacheKiB = 256

// createCacheKiB bounds the writer's page cache while migrate creates the
// schema of a new database (see there).
const createCacheKiB = 64

// writerDSN builds the DSN of the Store's connection. The _pragma values run
// on every new connection (busy_timeout first, then in lexical order), and
// _txlock=immediate makes each transaction take the write lock at BEGIN, so
// a lock conflict waits in busy_timeout instead of failing on the first write.
func writerDSN(path string, o Options) (string, error) {
	uri, err := fileURI(path)
	if err != nil {
		return "", err
	}
	sync := "NORMAL"
	if o.Sync == SyncFull {
		sync = "FULL"
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", fmt.Sprintf("cache_size(%d)", -writerCacheKiB))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	// Checkpoints run beside the commits, not inside one (checkpoint.go);
	// this is the backstop when commits never pause.
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", backstopPages))
	q.Set("_txlock", "immediate")
	if registerWALVFS() {
		// One write per commit to the log (walvfs.go).
		q.Set("vfs", walVFSName)
	}
	return uri + "?" + q.Encode(), nil
}

// checkWAL opens the connection (running the DSN pragmas) and verifies the
// database really is in WAL mode: PRAGMA journal_mode silently keeps the old
// mode where WAL is not possible.
func checkWAL(db *sql.DB) error {
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	return nil
}

// openReaders makes the Store's pool of read-only connections to path (the
// same DSN as QueryReadOnly: mode=ro and query_only), of one connection
// until warmReaders has opened it.
func openReaders(path string) (*sql.DB, error) {
	dsn, err := readOnlyDSN(path)
	if err != nil {
		return nil, err
	}
	rdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open read connections: %w", err)
	}
	rdb.SetMaxOpenConns(1)
	rdb.SetMaxIdleConns(1)
	return rdb, nil
}

package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/auditquery"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Bounds of POST /v1/audit/sql.
const (
	// maxAuditSQLBody bounds the request body.
	maxAuditSQLBody = 64 << 10
	// DefaultAuditSQLRows and MaxAuditSQLRows bound the rows answered; a
	// result with more is cut and says so ("truncated").
	DefaultAuditSQLRows = 500
	MaxAuditSQLRows     = 5000
	// MaxAuditSQLBytes bounds the values answered (text and blob bytes, 8
	// per number), cut like rows.
	MaxAuditSQLBytes = 2 << 20
	// MaxAuditSQLValueBytes bounds each string and blob a statement reads
	// or makes: far above any value the audit trail holds, far below what
	// would take a small board's memory.
	MaxAuditSQLValueBytes = 16 << 20
	// AuditSQLTimeout bounds one query's run, its wait for a slot included.
	// The wait ends a tenth of it earlier (auditSlotWait): a statement
	// that gets a slot has at least that long to run.
	AuditSQLTimeout = 10 * time.Second
	// MaxAuditSQLRunning is how many queries run at once.
	MaxAuditSQLRunning = 2
)

// ErrTypePermission is the error type of a refused write (403).
const ErrTypePermission = "permission_error"

// AuditSQLRequest is the body of POST /v1/audit/sql: either SQL, or a
// ready-made report by name (with its argument when it takes one).
type AuditSQLRequest struct {
	SQL    string `json:"sql,omitempty"`
	Report string `json:"report,omitempty"`
	Arg    string `json:"arg,omitempty"`
	// MaxRows bounds the rows answered; 0 means DefaultAuditSQLRows, at
	// most MaxAuditSQLRows.
	MaxRows int `json:"max_rows,omitempty"`
}

// AuditSQLResult is the answer of POST /v1/audit/sql.
type AuditSQLResult struct {
	Columns []string `json:"columns"`
	// Rows hold one value per column: null, a number or a string (a blob
	// that is not UTF-8 as x'hex').
	Rows [][]any `json:"rows"`
	// Truncated is true when the statement had more rows than answered.
	Truncated bool  `json:"truncated"`
	ElapsedMS int64 `json:"elapsed_ms"`
}

// ReportInfo is one ready-made report of GET /v1/audit/reports.
type ReportInfo struct {
	Name string `json:"name"`
	Doc  string `json:"doc"`
	// Arg names the report's one parameter; absent when it takes none.
	Arg   string `json:"arg,omitempty"`
	Query string `json:"query"`
}

// auditQuery is a decoded AuditSQLRequest: the statement to run.
type auditQuery struct {
	sql     string
	args    []string
	maxRows int
}

// decodeAuditSQLRequest parses a POST /v1/audit/sql body; the error names
// the field at fault as param.
func decodeAuditSQLRequest(body []byte) (q auditQuery, param string, err error) {
	var req AuditSQLRequest
	if err := decodeStrict(body, &req, `{"sql": "SELECT ..."} or {"report": NAME, "arg": optional}`); err != nil {
		return q, errParam(err), err
	}
	switch {
	case req.MaxRows < 0 || req.MaxRows > MaxAuditSQLRows:
		return q, "max_rows", fmt.Errorf("max_rows: want 1 to %d (0: %d)", MaxAuditSQLRows, DefaultAuditSQLRows)
	case req.MaxRows == 0:
		req.MaxRows = DefaultAuditSQLRows
	}
	q.maxRows = req.MaxRows
	switch {
	case req.SQL != "" && req.Report != "":
		return q, "report", errors.New("sql and report exclude each other")
	case req.Report != "":
		r, ok := sqlite.ReportByName(req.Report)
		if !ok {
			return q, "report", fmt.Errorf("no report %.60q (GET /v1/audit/reports lists them)", req.Report)
		}
		switch {
		case r.Arg != "" && req.Arg == "":
			return q, "arg", fmt.Errorf("report %s needs its %s", r.Name, r.Arg)
		case r.Arg == "" && req.Arg != "":
			return q, "arg", fmt.Errorf("report %s takes no argument", r.Name)
		case r.Arg != "":
			q.args = []string{req.Arg}
		}
		q.sql = r.Query
	case strings.TrimSpace(req.SQL) == "":
		return q, "sql", errors.New("sql: required (or report)")
	case req.Arg != "":
		return q, "arg", errors.New("arg: only with report")
	default:
		q.sql = req.SQL
	}
	return q, "", nil
}

func (n *Node) handleAuditSQL(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, maxAuditSQLBody)
	if !ok {
		return
	}
	q, param, err := decodeAuditSQLRequest(body)
	if err != nil {
		writeAPIErrorParam(w, http.StatusBadRequest, param, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), n.auditTimeout)
	defer cancel()
	start := time.Now()
	// A statement may hold a core and its memory bound for its whole time
	// bound: a few run at once, the others wait for one to end, but not
	// to the end of their own bound. Statements that start together end
	// together: those waiting got the slots a few milliseconds before
	// their own bound, each started a child only to stop it, and all
	// answered 504 "ran past its time bound" for a statement that never
	// ran, where 429 says to retry.
	wait, cancelWait := context.WithTimeout(ctx, auditSlotWait(n.auditTimeout))
	defer cancelWait()
	select {
	case n.auditSlots <- struct{}{}:
		defer func() { <-n.auditSlots }()
	case <-wait.Done():
		if r.Context().Err() != nil {
			return // the caller is gone
		}
		writeAPIError(w, http.StatusTooManyRequests, ErrTypeBusy, fmt.Sprintf("%d audit queries ran for the whole %s this one waited; retry later",
			cap(n.auditSlots), auditSlotWait(n.auditTimeout)))
		return
	}
	res, err := n.auditQuery(ctx, auditquery.Request{Path: n.AuditPath(), SQL: q.sql, Args: q.args,
		Rows: q.maxRows, Bytes: MaxAuditSQLBytes, ValueBytes: MaxAuditSQLValueBytes, TempInMemory: true, Timeout: n.auditTimeout})
	if err != nil {
		code, typ := auditSQLErrorStatus(ctx, err)
		writeJSON(w, code, errorBody{Error: apiErrorf(typ, "sql", "query audit database: %s", strings.TrimPrefix(err.Error(), "query audit database: "))})
		return
	}
	mayRefuseAnswer(w) // a query changes nothing: its client may ask again
	writeJSON(w, http.StatusOK, AuditSQLResult{Columns: res.Columns, Rows: res.Rows, Truncated: res.Truncated,
		ElapsedMS: time.Since(start).Milliseconds()})
}

// auditSlotWait is how long a statement with time bound d waits for a
// slot: nine tenths of d, so that it runs for at least the last tenth.
func auditSlotWait(d time.Duration) time.Duration { return d - d/10 }

// auditSQLErrorStatus maps a failed query to its status and error type:
// a refused write is 403, a statement SQLite rejects or that needs more
// than a query may use 400, the time bound 504, anything else (the
// database cannot be read) 503.
func auditSQLErrorStatus(ctx context.Context, err error) (int, string) {
	switch auditquery.KindOf(ctx, err) {
	case auditquery.KindReadOnly:
		return http.StatusForbidden, ErrTypePermission
	case auditquery.KindTimeout:
		return http.StatusGatewayTimeout, ErrTypeTimeout
	case auditquery.KindStatement, auditquery.KindTooBig, auditquery.KindMemory:
		return http.StatusBadRequest, ErrTypeInvalidRequest
	}
	return http.StatusServiceUnavailable, ErrTypeNotReady
}

func (n *Node) handleAuditReports(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Reports []ReportInfo `json:"reports"`
	}{Reports: make([]ReportInfo, 0, len(sqlite.Reports))}
	for _, r := range sqlite.Reports {
		out.Reports = append(out.Reports, ReportInfo{Name: r.Name, Doc: r.Doc, Arg: r.Arg, Query: r.Query})
	}
	writeJSON(w, http.StatusOK, out)
}

// AuditTierStatus is what GET /v1/audit/status answers: the warm
// database at rest (what `evoclaw audit status --json` prints), and the
// retention policy that bounds its window.
type AuditTierStatus struct {
	SchemaVersion int    `json:"schema_version"`
	ChainID       string `json:"chain_id"`
	HeadSeq       int64  `json:"head_seq"`
	ChainStart    int64  `json:"chain_start"`
	Records       int64  `json:"records"`
	// Oldest is the time of the oldest warm record: the warm window runs
	// from it to now. Absent when the store is empty.
	Oldest     *time.Time `json:"oldest"`
	ShippedSeq int64      `json:"shipped_seq"`
	// Unshipped counts records not yet in the cold tier.
	Unshipped   int64      `json:"unshipped"`
	PrunePasses int64      `json:"prune_passes"`
	LastPrune   *time.Time `json:"last_prune"`
	UsedBytes   int64      `json:"used_bytes"`
	// ColdTier is true when a cold tier is configured; WarmWindowS is how
	// long records stay warm then, MaxAgeS and MaxBytes bound the warm
	// store without one (0: no bound), in seconds and bytes.
	ColdTier    bool    `json:"cold_tier"`
	WarmWindowS float64 `json:"warm_window_s"`
	MaxAgeS     float64 `json:"max_age_s"`
	MaxBytes    int64   `json:"max_bytes"`
}

func (n *Node) handleAuditStatus(w http.ResponseWriter, r *http.Request) {
	st, err := n.auditStatus.do(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			return // the caller is gone
		}
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	pol := n.cfg.Audit.Retention
	out := AuditTierStatus{SchemaVersion: st.SchemaVersion, ChainID: st.ChainID, HeadSeq: st.HeadSeq, ChainStart: st.ChainStart,
		Records: st.Records, Oldest: timePtr(st.Oldest), ShippedSeq: st.ShippedSeq, Unshipped: st.Lag(), PrunePasses: st.Checkpoints,
		LastPrune: timePtr(st.LastPrune), UsedBytes: st.UsedBytes, ColdTier: n.cfg.Audit.Cold.Enabled(),
		WarmWindowS: pol.WarmWindow.Seconds(), MaxAgeS: pol.MaxAge.Seconds(), MaxBytes: pol.MaxBytes}
	if out.ColdTier && pol.WarmWindow == 0 {
		out.WarmWindowS = sqlite.DefaultWarmWindow.Seconds()
	}
	writeJSON(w, http.StatusOK, out)
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// readAuditStatus reads the warm database's status, within AuditSQLTimeout.
func (n *Node) readAuditStatus(ctx context.Context) (*sqlite.WarmStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, AuditSQLTimeout)
	defer cancel()
	return sqlite.ReadStatus(ctx, n.AuditPath())
}

// sharedRead runs a read for its callers one at a time: a caller that
// arrives while a read runs waits for the next one, which starts when that
// one ends and answers every caller that arrived meanwhile, so each caller
// gets a read that started after it asked. GET /v1/audit/status opens its
// own connection to the database and counts every table's rows: 300
// clients asking at once each opened one, and took a node from 90 to 370
// MB and 900 open files.
type sharedRead[T any] struct {
	read func(ctx context.Context) (T, error)
	// ctx ends the read in progress at close; wg waits for it.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	running *readCall[T] // the read in progress; nil when none
	next    *readCall[T] // the read that starts when running ends; nil when no one waits for one
	closed  bool
}

// readCall is one read and its result, set before done is closed.
type readCall[T any] struct {
	done chan struct{}
	val  T
	err  error
}

func newSharedRead[T any](read func(ctx context.Context) (T, error)) *sharedRead[T] {
	ctx, stop := context.WithCancel(context.Background())
	return &sharedRead[T]{read: read, ctx: ctx, stop: stop}
}

// do returns the result of a read that started after the call; ctx ends
// only the wait (the read finishes for the others).
func (s *sharedRead[T]) do(ctx context.Context) (T, error) {
	var zero T
	c := s.join()
	if c == nil {
		return zero, ErrNodeStopping
	}
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// join returns the read that answers a call made now: the one it starts
// when none runs, else the one after the read in progress. Nil after
// close.
func (s *sharedRead[T]) join() *readCall[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil
	case s.running == nil:
		s.running = &readCall[T]{done: make(chan struct{})}
		s.startLocked(s.running)
		return s.running
	case s.next == nil:
		s.next = &readCall[T]{done: make(chan struct{})}
	}
	return s.next
}

// startLocked runs c; when it ends, the next read starts.
func (s *sharedRead[T]) startLocked(c *readCall[T]) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c.val, c.err = s.read(s.ctx)
		close(c.done)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.running, s.next = s.next, nil
		if s.running != nil {
			s.startLocked(s.running)
		}
	}()
}

// close ends the read in progress and waits for it and the one after it;
// later calls fail at once.
func (s *sharedRead[T]) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

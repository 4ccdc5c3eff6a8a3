// Package auditquery runs the SQL of POST /v1/audit/sql: one read-only
// statement on the node's audit database, bounded in rows, bytes, time and
// memory, either in this process (Local) or in a child process of the same
// binary (Runner), where an operating-system limit bounds the memory a
// statement can take and a lower priority the CPU it can take from the node.
//
// Why a child: SQLite bounds each string or blob (Request.ValueBytes), but
// not a row, and a row can hold thousands of columns:
// "SELECT zeroblob(16000000), zeroblob(16000000), ..." needs a gigabyte
// however each value is bounded, and a process keeps what it allocated
// for SQLite. A statement that needs more than the child may use ends the
// child, not the node: the caller gets KindMemory.
package auditquery

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Request is one statement to run.
type Request struct {
	// Path is the audit database.
	Path string `json:"path"`
	SQL  string `json:"sql"`
	// Args are the statement's parameters (strings: a report's argument).
	Args []string `json:"args,omitempty"`
	// Rows, Bytes, ValueBytes and TempInMemory are sqlite.Limits.
	Rows         int   `json:"rows"`
	Bytes        int64 `json:"bytes"`
	ValueBytes   int   `json:"value_bytes"`
	TempInMemory bool  `json:"temp_in_memory"`
	// Timeout bounds the run; 0 means none beyond the caller's context.
	Timeout time.Duration `json:"timeout"`
}

// Result is a statement's answer, its values as JSON holds them: null, a
// number, or a string (a blob that is not UTF-8 as x'hex').
type Result struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated"`
}

// Kinds of failure: what the API answers depends on them.
const (
	KindReadOnly    = "read_only"   // the statement tries to write (or attach, or change a setting)
	KindStatement   = "statement"   // SQLite rejects the statement: syntax, no such table, more than one statement
	KindTooBig      = "too_big"     // a string or blob over Request.ValueBytes
	KindMemory      = "memory"      // the statement needs more memory than a query may use
	KindTimeout     = "timeout"     // the time bound ran out
	KindUnavailable = "unavailable" // the database cannot be read, or the child failed
)

// Error is a failed statement.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// KindOf returns the kind of err (KindUnavailable when it is none of the
// others); ctx is the run's context.
func KindOf(ctx context.Context, err error) string {
	var qe *Error
	var se *msqlite.Error
	switch {
	case errors.As(err, &qe):
		return qe.Kind
	case errors.Is(err, sqlite.ErrReadOnly):
		return KindReadOnly
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	case sqlite.IsTooBig(err):
		return KindTooBig
	case errors.Is(err, sqlite.ErrNotOneStatement):
		return KindStatement
	case errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_ERROR:
		return KindStatement
	case errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOMEM:
		return KindMemory
	}
	return KindUnavailable
}

// Local runs req in this process. A failure is an *Error.
func Local(ctx context.Context, req Request) (*Result, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	args := make([]any, len(req.Args))
	for i, a := range req.Args {
		args[i] = a
	}
	res, err := sqlite.QueryLimited(ctx, req.Path, sqlite.Limits{Rows: req.Rows, Bytes: req.Bytes, ValueBytes: req.ValueBytes, TempInMemory: req.TempInMemory}, req.SQL, args...)
	if err != nil {
		kind := KindOf(ctx, err)
		msg := err.Error()
		switch kind {
		case KindTooBig:
			if req.ValueBytes <= 0 {
				break // SQLite's own bound: its message says it
			}
			msg = fmt.Sprintf("%s: a string or blob of the statement is larger than %d bytes, the most an audit query over the API reads or makes (`evoclaw audit sql` on the node has no such bound)", msg, req.ValueBytes)
		case KindTimeout:
			msg = fmt.Sprintf("%s: the statement ran past its time bound", msg)
		case KindMemory:
			msg = fmt.Sprintf("%s: the statement needs more memory than an audit query may use: narrow it (fewer or smaller values)", msg)
		}
		return nil, &Error{Kind: kind, Message: msg}
	}
	out := &Result{Columns: res.Columns, Rows: make([][]any, len(res.Rows)), Truncated: res.Truncated}
	if out.Columns == nil {
		out.Columns = []string{}
	}
	for i, row := range res.Rows {
		out.Rows[i] = make([]any, len(row))
		for j, v := range row {
			out.Rows[i][j] = jsonCell(v)
		}
	}
	return out, nil
}

// jsonCell maps a value of a query row to what JSON can hold.
func jsonCell(v any) any {
	switch v := v.(type) {
	case []byte:
		if utf8.Valid(v) {
			return string(v)
		}
		return "x'" + hex.EncodeToString(v) + "'"
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return v
}

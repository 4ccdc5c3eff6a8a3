package libsqlhttp

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// connector wraps the library's connector so that every call into it is
// guarded by catch.
type connector struct {
	inner driver.Connector
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	ci, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, c.clean(err)
	}
	return &conn{c: c, ci: ci}, nil
}

func (c *connector) Driver() driver.Driver { return c.inner.Driver() }

// clean returns err with its text safe to print (see answerError); the
// sentinels database/sql compares by identity are returned as they are.
func (c *connector) clean(err error) error {
	switch err {
	case nil, io.EOF, driver.ErrSkip, driver.ErrBadConn, driver.ErrRemoveArgument:
		return err
	}
	return &answerError{err: err, text: printable(err.Error())}
}

// answerError is an error of the client library, whose text may hold
// whatever the server answered, made safe to print.
type answerError struct {
	err  error
	text string
}

func (e *answerError) Error() string { return e.text }
func (e *answerError) Unwrap() error { return e.err }

// conn is one library connection. Once a call on it panicked, or a
// request of it was refused for going to another server (the library keeps
// the base_url an answer named for every later statement of the
// connection, even after its stream is closed), it is reported invalid so
// that database/sql drops it.
type conn struct {
	c      *connector
	ci     driver.Conn
	broken atomic.Bool
}

// catch turns a panic of the library (a malformed answer it indexed into)
// into ErrMalformedAnswer, marks the connection broken after a request
// to another server was refused, and cleans the error text. Deferred by
// every call into the library.
func (cn *conn) catch(err *error) {
	if r := recover(); r != nil {
		cn.broken.Store(true)
		*err = fmt.Errorf("%w: %v", ErrMalformedAnswer, r)
	}
	if errors.Is(*err, ErrForeignServer) {
		cn.broken.Store(true)
	}
	*err = cn.c.clean(*err)
}

// Interfaces database/sql looks for; the library's connection has them all.
var (
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
)

func (cn *conn) Prepare(query string) (driver.Stmt, error) {
	return cn.PrepareContext(context.Background(), query)
}

func (cn *conn) PrepareContext(ctx context.Context, query string) (_ driver.Stmt, err error) {
	defer cn.catch(&err)
	st, err := cn.ci.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &stmt{cn: cn, st: st}, nil
}

func (cn *conn) Close() (err error) {
	defer cn.catch(&err)
	return cn.ci.Close()
}

func (cn *conn) Begin() (driver.Tx, error) {
	return cn.BeginTx(context.Background(), driver.TxOptions{})
}

func (cn *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (_ driver.Tx, err error) {
	defer cn.catch(&err)
	t, err := cn.ci.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &tx{cn: cn, t: t}, nil
}

func (cn *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Result, err error) {
	defer cn.catch(&err)
	return cn.ci.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (cn *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (_ driver.Rows, err error) {
	defer cn.catch(&err)
	r, err := cn.ci.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return &rows{cn: cn, r: r}, nil
}

func (cn *conn) Ping(ctx context.Context) (err error) {
	defer cn.catch(&err)
	return cn.ci.(driver.Pinger).Ping(ctx)
}

func (cn *conn) ResetSession(ctx context.Context) (err error) {
	defer cn.catch(&err)
	if cn.broken.Load() {
		return driver.ErrBadConn
	}
	return cn.ci.(driver.SessionResetter).ResetSession(ctx)
}

func (cn *conn) IsValid() bool { return !cn.broken.Load() }

// stmt, tx and rows guard the library's values of a conn the same way.
type stmt struct {
	cn *conn
	st driver.Stmt
}

func (s *stmt) Close() (err error) {
	defer s.cn.catch(&err)
	return s.st.Close()
}

func (s *stmt) NumInput() int { return s.st.NumInput() }

func (s *stmt) Exec(args []driver.Value) (_ driver.Result, err error) {
	defer s.cn.catch(&err)
	return s.st.Exec(args) //nolint:staticcheck // the library's Stmt has both forms
}

func (s *stmt) Query(args []driver.Value) (_ driver.Rows, err error) {
	defer s.cn.catch(&err)
	r, err := s.st.Query(args) //nolint:staticcheck // as Exec
	if err != nil {
		return nil, err
	}
	return &rows{cn: s.cn, r: r}, nil
}

type tx struct {
	cn *conn
	t  driver.Tx
}

func (t *tx) Commit() (err error) {
	defer t.cn.catch(&err)
	return t.t.Commit()
}

func (t *tx) Rollback() (err error) {
	defer t.cn.catch(&err)
	return t.t.Rollback()
}

type rows struct {
	cn *conn
	r  driver.Rows
}

func (r *rows) Columns() []string { return r.r.Columns() }

func (r *rows) Close() (err error) {
	defer r.cn.catch(&err)
	return r.r.Close()
}

func (r *rows) Next(dest []driver.Value) (err error) {
	defer r.cn.catch(&err)
	return r.r.Next(dest)
}

func (r *rows) HasNextResultSet() bool {
	rs, ok := r.r.(driver.RowsNextResultSet)
	return ok && rs.HasNextResultSet()
}

func (r *rows) NextResultSet() (err error) {
	defer r.cn.catch(&err)
	rs, ok := r.r.(driver.RowsNextResultSet)
	if !ok {
		return io.EOF
	}
	return rs.NextResultSet()
}

// maxErrorText bounds the text of one error from the library.
const maxErrorText = 1024

// printable returns s with every character that is not printable (control
// characters, escape sequences' introducers, invisible format characters
// such as a right-to-left override) and every byte that is not UTF-8
// escaped Go-style, cut at maxErrorText bytes with the full length said.
func printable(s string) string {
	var b strings.Builder
	for i, r := range s {
		if b.Len() >= maxErrorText {
			fmt.Fprintf(&b, "... (%d bytes)", len(s))
			break
		}
		switch {
		case r == utf8.RuneError && strings.HasPrefix(s[i:], "\ufffd"):
			b.WriteRune(r) // a real U+FFFD
		case r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(" | ")
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

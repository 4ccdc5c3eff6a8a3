package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// wconn is the writer's one connection, held from Open to Close, with the
// statements that begin, commit and roll back its transactions prepared
// once. The committer runs its transactions here rather than through
// database/sql's Tx, which starts a goroutine for every transaction (to
// watch its context), wakes it again at the commit, allocates a context
// and binds every prepared statement to the transaction anew; and whose
// BEGIN and COMMIT SQLite parses every time. The committer alone uses it.
type wconn struct {
	conn                    *sql.Conn
	begin, commit, rollback *sql.Stmt
	// commitNow is commitTx without a context, made once: the commit seam
	// takes it on every transaction.
	commitNow func() error
}

// openWConn takes db's connection for the writer. db holds one
// connection: nothing else may use db until close.
func openWConn(ctx context.Context, db *sql.DB) (*wconn, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("take the writer's connection: %w", err)
	}
	w := &wconn{conn: c}
	w.commitNow = func() error { return w.commitTx(context.Background()) }
	for _, p := range []struct {
		st *(*sql.Stmt)
		q  string
	}{{&w.begin, "BEGIN IMMEDIATE"}, {&w.commit, "COMMIT"}, {&w.rollback, "ROLLBACK"}} {
		if *p.st, err = c.PrepareContext(ctx, p.q); err != nil {
			return nil, errors.Join(fmt.Errorf("prepare %s: %w", p.q, err), w.close())
		}
	}
	return w, nil
}

// beginTx begins a write transaction. A transaction left open (a rollback
// that failed) is rolled back first, so that one failure does not refuse
// every later write.
func (w *wconn) beginTx(ctx context.Context) error {
	_, err := w.begin.ExecContext(ctx)
	if err != nil && strings.Contains(err.Error(), "within a transaction") {
		if rerr := w.rollbackTx(ctx); rerr != nil {
			return errors.Join(err, rerr)
		}
		_, err = w.begin.ExecContext(ctx)
	}
	return err
}

// commitTx commits the open transaction. When it fails the transaction
// may still be open (SQLITE_BUSY) or already rolled back (a full disk):
// the caller rolls back either way.
func (w *wconn) commitTx(ctx context.Context) error {
	_, err := w.commit.ExecContext(ctx)
	return err
}

// rollbackTx rolls the open transaction back. SQLite has already rolled
// it back after some errors (SQLITE_FULL, I/O errors): that is not a
// failure.
func (w *wconn) rollbackTx(ctx context.Context) error {
	_, err := w.rollback.ExecContext(ctx)
	if err != nil && strings.Contains(err.Error(), "no transaction is active") {
		return nil
	}
	return err
}

// close closes the statements and gives the connection back to its pool.
func (w *wconn) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.begin, w.commit, w.rollback} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(append(errs, w.conn.Close())...)
}

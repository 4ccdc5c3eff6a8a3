package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// stmtCache holds the writer's prepared statements, one per query text.
// Parsing and planning a statement costs more than running it on the
// small rows the hot path writes (a CPU profile of a round trip put
// SQLite's parser at a third of the writer's time), so the statements
// every tool call and chat runs are prepared once, when the Store opens,
// on the writer's one connection, and bound to each transaction with
// Tx.StmtContext, which reuses the connection's prepared statement. They
// are prepared up front because preparing needs the connection, which a
// transaction holds while the writer runs. Its statements do not change after Open.
type stmtCache struct {
	stmts map[string]*sql.Stmt
	// tx and bound are the statements of stmts bound to the committer's
	// current transaction.
	tx    *sql.Tx
	bound map[string]*sql.Stmt
}

// hotQueries are the writes of every tool call and chat (chained inserts
// are added from chainInserts).
var hotQueries = []string{qSeal, qUpsertConversation, qBeginRequest, qReadRequest, qFinishRequest, qNoteProcess}

// prepareStmts prepares hotQueries and every chained insert on db. A query
// that does not prepare (a schema a migration has not reached) is left
// out and runs unprepared.
func prepareStmts(ctx context.Context, db *sql.DB) stmtCache {
	c := stmtCache{stmts: make(map[string]*sql.Stmt, len(hotQueries)+len(summaryQueries)+len(chainInserts)), bound: make(map[string]*sql.Stmt)}
	add := func(q string) {
		if st, err := db.PrepareContext(ctx, q); err == nil {
			c.stmts[q] = st
		}
	}
	for _, q := range hotQueries {
		add(q)
	}
	for _, q := range summaryQueries {
		add(q)
	}
	for _, q := range chainInserts {
		add(q)
	}
	return c
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	var first error
	for q, st := range c.stmts {
		if err := st.Close(); err != nil && first == nil {
			first = fmt.Errorf("close prepared statement: %w", err)
		}
		delete(c.stmts, q)
	}
	clear(c.bound)
	c.tx = nil
	return first
}

// txExec runs query, prepared once, inside tx (the writer's transaction).
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.stmts.in(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQueryRow runs query, prepared once, inside tx.
func (s *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := s.stmts.in(ctx, tx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// in returns query's prepared statement bound to tx, or nil when query is
// not prepared. A statement is bound once per transaction (Tx.StmtContext
// builds a new one on every call): a batch of n records runs each insert n
// times. The transaction closes the statements it bound when it ends; the
// committer alone calls in.
func (c *stmtCache) in(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	st, ok := c.stmts[query]
	if !ok {
		return nil
	}
	if c.tx != tx {
		clear(c.bound)
		c.tx = tx
	}
	b, ok := c.bound[query]
	if !ok {
		b = tx.StmtContext(ctx, st)
		c.bound[query] = b
	}
	return b
}

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// stmtCache holds the writer's prepared statements, one per query text.
// Parsing and planning a statement costs more than running it on the
// small rows the hot path writes (a CPU profile of a round trip put
// SQLite's parser at a third of the writer's time), so the statements
// every tool call and chat runs are prepared once on the writer's one
// connection and bound to each transaction with Tx.StmtContext, which
// reuses the connection's prepared statement.
//
// A statement is prepared after the transaction that first ran it, not
// when the Store opens: preparing them all (twenty-odd, most of which a
// node does not run until its first chat) was a tenth of opening the
// store, on the way to a node's first answer. Preparing needs the
// connection, which a transaction holds while the writer runs, so the
// first use runs unprepared and notes the query; the committer prepares
// the noted ones once that transaction has ended (prepareWanted). The
// committer alone uses the cache.
type stmtCache struct {
	stmts map[string]*sql.Stmt
	// wanted are cachable queries run unprepared since the last
	// prepareWanted; skip those that did not prepare (a schema a migration
	// has not reached), which run unprepared from then on. Both hold
	// queries of cachable only, so they stay bounded.
	wanted []string
	skip   map[string]bool
	// tx and bound are the statements of stmts bound to the committer's
	// current transaction.
	tx    *sql.Tx
	bound map[string]*sql.Stmt
}

// hotQueries are the writes of every tool call and chat (chained inserts
// are added from chainInserts).
var hotQueries = []string{qSeal, qUpsertConversation, qBeginRequest, qReadRequest, qFinishRequest, qNoteProcess}

// cachable are the queries the cache prepares: hotQueries, the summaries'
// and every chained insert.
var cachable = func() map[string]bool {
	m := make(map[string]bool, len(hotQueries)+len(summaryQueries)+len(chainInserts))
	for _, q := range hotQueries {
		m[q] = true
	}
	for _, q := range summaryQueries {
		m[q] = true
	}
	for _, q := range chainInserts {
		m[q] = true
	}
	return m
}()

func newStmtCache() stmtCache {
	return stmtCache{stmts: make(map[string]*sql.Stmt, len(cachable)), skip: make(map[string]bool), bound: make(map[string]*sql.Stmt)}
}

// prepareWanted prepares on db the queries noted since the last call. The
// committer calls it between transactions, when the connection is free.
func (c *stmtCache) prepareWanted(ctx context.Context, db *sql.DB) {
	for _, q := range c.wanted {
		if st, err := db.PrepareContext(ctx, q); err == nil {
			c.stmts[q] = st
		} else {
			c.skip[q] = true
		}
	}
	c.wanted = c.wanted[:0]
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
// not prepared yet (then it is noted for prepareWanted). A statement is bound once per transaction (Tx.StmtContext
// builds a new one on every call): a batch of n records runs each insert n
// times. The transaction closes the statements it bound when it ends; the
// committer alone calls in.
func (c *stmtCache) in(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	st, ok := c.stmts[query]
	if !ok {
		if cachable[query] && !c.skip[query] && !slices.Contains(c.wanted, query) {
			c.wanted = append(c.wanted, query)
		}
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

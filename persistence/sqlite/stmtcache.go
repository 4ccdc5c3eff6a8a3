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
// every tool call and chat runs are prepared on the writer's one
// connection (wconn), which runs every transaction, and run there as they
// are.
//
// A statement is prepared the first time it runs, not when the Store
// opens: preparing them all (twenty-odd, most of which a node does not run
// until its first chat) was a tenth of opening the store, on the way to a
// node's first answer. The committer alone uses the cache.
type stmtCache struct {
	stmts map[string]*sql.Stmt
	// skip holds the cachable queries that did not prepare (a schema a
	// migration has not reached): they run unprepared from then on. It
	// holds queries of cachable only, so it stays bounded.
	skip map[string]bool
}

// hotQueries are the writes of every tool call and chat (chained inserts
// are added from chainInserts).
var hotQueries = []string{qSeal, qUpsertConversation, qBeginRequest, qReadRequest, qFinishRequest, qHoldReport, qNoteProcess}

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
	return stmtCache{stmts: make(map[string]*sql.Stmt, len(cachable)), skip: make(map[string]bool)}
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
	return first
}

// txExec runs query inside tx, prepared once when tx is the writer's
// connection.
func (s *Store) txExec(ctx context.Context, tx dbtx, query string, args ...any) (sql.Result, error) {
	if st := s.stmts.in(ctx, s.writerConn(tx), query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQueryRow runs query inside tx, prepared once when tx is the writer's
// connection.
func (s *Store) txQueryRow(ctx context.Context, tx dbtx, query string, args ...any) *sql.Row {
	if st := s.stmts.in(ctx, s.writerConn(tx), query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// writerConn returns tx when it is the writer's connection, on which the
// cache's statements are prepared, and nil otherwise: a statement of the
// cache run with another transaction open would run outside it.
func (s *Store) writerConn(tx dbtx) *sql.Conn {
	if s.wc != nil && tx == dbtx(s.wc.conn) {
		return s.wc.conn
	}
	return nil
}

// in returns query's prepared statement, preparing it on conn the first
// time it runs. It returns nil, and the caller runs query unprepared, when
// conn is nil, when query is not one the cache keeps, or when it did not
// prepare. The committer alone calls in.
func (c *stmtCache) in(ctx context.Context, conn *sql.Conn, query string) *sql.Stmt {
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if conn == nil || !cachable[query] || c.skip[query] {
		return nil
	}
	st, err := conn.PrepareContext(ctx, query)
	if err != nil {
		c.skip[query] = true
		return nil
	}
	c.stmts[query] = st
	return st
}

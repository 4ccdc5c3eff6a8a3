package sqlite

import (
	"fmt"
	"strings"
)

// checkOneStatement reports an error wrapping ErrNotOneStatement unless q
// holds exactly one SQL statement. The driver would run every statement of a
// script and return only the last one's rows, which hides what an auditor
// asked for. This is not a security check (the read-only connection is):
// a CREATE TRIGGER body, whose inner semicolons this does not understand,
// is counted as several statements and refused, which costs nothing on a
// read-only database.
func checkOneStatement(q string) error {
	n := countStatements(q)
	switch {
	case n == 0:
		return fmt.Errorf("%w: the query is empty", ErrNotOneStatement)
	case n > 1:
		return fmt.Errorf("%w: the query holds %d statements", ErrNotOneStatement, n)
	}
	return nil
}

// countStatements counts the non-empty ';'-separated statements of q,
// skipping semicolons inside quoted strings and identifiers ('a', "a", `a`,
// [a]) and inside comments (-- to end of line, /* to */), as SQLite's
// tokenizer does.
func countStatements(q string) int {
	n := 0
	inStmt := false // a token was seen since the last ';'
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			i = skipPast(q, i+2, "\n")
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			i = skipPast(q, i+2, "*/")
		case c == ';':
			if inStmt {
				n++
				inStmt = false
			}
			i++
		case c == '\'' || c == '"' || c == '`':
			// A doubled quote inside is an escaped quote: skipping past
			// the first closing quote and re-entering handles it.
			i = skipPast(q, i+1, string(c))
			inStmt = true
		case c == '[':
			i = skipPast(q, i+1, "]")
			inStmt = true
		default:
			i++
			inStmt = true
		}
	}
	if inStmt {
		n++
	}
	return n
}

// skipPast returns the index just past the first end found in q at or after
// from, or len(q) when there is none.
func skipPast(q string, from int, end string) int {
	j := strings.Index(q[from:], end)
	if j < 0 {
		return len(q)
	}
	return from + j + len(end)
}

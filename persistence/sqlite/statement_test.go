package sqlite

import (
	"strings"
	"testing"
)

func TestCountStatements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sql  string
		want int
	}{
		{"", 0},
		{"  \n\t", 0},
		{";;", 0},
		{"-- only a comment", 0},
		{"/* only a comment */", 0},
		{"SELECT 1", 1},
		{"SELECT 1;", 1},
		{"SELECT 1;;  ;", 1},
		{"SELECT 1; SELECT 2", 2},
		{"SELECT 1; SELECT 2;", 2},
		{"SELECT 'a;b'", 1},
		{"SELECT 'it''s; fine'", 1},
		{`SELECT "a;b" FROM t`, 1},
		{"SELECT `a;b` FROM t", 1},
		{"SELECT [a;b] FROM t", 1},
		{"SELECT 1 -- ; SELECT 2", 1},
		{"SELECT 1 -- c\n; SELECT 2", 2},
		{"SELECT 1 /* ; */ ; SELECT /* */ 2", 2},
		{"SELECT 1 /* unterminated ; SELECT 2", 1},
		{"SELECT 'unterminated ; SELECT 2", 1},
		{"SELECT 1 - -1; SELECT 2", 2},
		{"SELECT 4 / 2; SELECT 2", 2},
	}
	for _, tt := range tests {
		if got := countStatements(tt.sql); got != tt.want {
			t.Errorf("countStatements(%q) = %d, want %d", tt.sql, got, tt.want)
		}
	}
}

func FuzzCountStatements(f *testing.F) {
	for _, s := range []string{"SELECT 1; SELECT 2", "SELECT 'a;b' -- x\n;", "/* ; */ [;] `;` \";\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := countStatements(s)
		if n < 0 || n > strings.Count(s, ";")+1 {
			t.Fatalf("countStatements(%q) = %d, with %d semicolons", s, n, strings.Count(s, ";"))
		}
		// Splitting at a top-level semicolon never merges statements:
		// appending a new statement after a complete one adds one.
		if n > 0 && !strings.ContainsAny(s, "'\"`[-/") {
			if got := countStatements(s + ";SELECT 1"); got != n+1 {
				t.Fatalf("countStatements(%q + \";SELECT 1\") = %d, want %d", s, got, n+1)
			}
		}
	})
}

package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
)

// TestQueryEachStreams: rows reach the callback while the query runs (an
// endless one here), and a canceled context ends it.
func TestQueryEachStreams(t *testing.T) {
	t.Parallel()
	path := auditDB(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cols []string
	n := 0
	err := QueryEach(ctx, path, "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n", nil,
		func(c []string) error { cols = c; return nil },
		func(row []any) error {
			n++
			if row[0] != int64(n) {
				t.Fatalf("row %d: %v", n, row)
			}
			if n == 2*MaxQueryRows {
				cancel()
			}
			return nil
		})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("got %v, want the canceled query's error", err)
	}
	if n < 2*MaxQueryRows || len(cols) != 1 || cols[0] != "x" {
		t.Fatalf("%d rows, columns %v", n, cols)
	}

	// A callback's error ends the query and comes back as is.
	stop := errors.New("enough")
	err = QueryEach(context.Background(), path, "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n", nil,
		func([]string) error { return nil }, func([]any) error { return stop })
	if err != stop {
		t.Fatalf("got %v, want the callback's error", err)
	}
}

// TestQueryEachTimeout: a deadline interrupts a query that produces no
// row (an endless count).
func TestQueryEachTimeout(t *testing.T) {
	t.Parallel()
	path := auditDB(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := QueryEach(ctx, path, "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n", nil,
		func([]string) error { return nil }, func([]any) error { return nil })
	if err == nil || ctx.Err() == nil {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("stopped after %v", d)
	}
}

// TestQueryEachRefusesWrites: the same checks as QueryReadOnly.
func TestQueryEachRefusesWrites(t *testing.T) {
	t.Parallel()
	path := auditDB(t, 1)
	for _, q := range []string{"DELETE FROM tool_calls", "PRAGMA journal_mode = DELETE", "PRAGMA wal_checkpoint"} {
		err := QueryEach(context.Background(), path, q, nil, func([]string) error { return nil }, func([]any) error { return nil })
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: got %v, want ErrReadOnly", q, err)
		}
	}
	err := QueryEach(context.Background(), path, "SELECT 1; SELECT 2", nil, func([]string) error { return nil }, func([]any) error { return nil })
	if !errors.Is(err, ErrNotOneStatement) {
		t.Errorf("two statements: %v", err)
	}
}

func writeRows(t *testing.T, rw RowWriter, res *Result) {
	t.Helper()
	if err := rw.Columns(res.Columns); err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		if err := rw.Row(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRowWritersMatchResult: the streaming writers write what WriteCSV
// and WriteJSON write for the same result.
func TestRowWritersMatchResult(t *testing.T) {
	t.Parallel()
	for _, res := range []*Result{
		{Columns: []string{"n", "i", "f", "s", "b", "q", "nl"}, Rows: [][]any{
			{nil, int64(42), 1.5, "text", []byte{0, 0xff}, `a,"b"`, "x\ny"},
			{nil, int64(-1), 0.0, "", []byte("utf8"), "é", "\t"},
		}},
		{Columns: []string{"empty"}, Rows: [][]any{}},
	} {
		var want, got bytes.Buffer
		if err := res.WriteCSV(&want); err != nil {
			t.Fatal(err)
		}
		writeRows(t, NewCSVWriter(&got, false), res)
		if got.String() != want.String() {
			t.Errorf("csv:\n%q\nwant\n%q", got.String(), want.String())
		}
		want.Reset()
		got.Reset()
		if err := res.WriteJSON(&want); err != nil {
			t.Fatal(err)
		}
		writeRows(t, NewJSONWriter(&got), res)
		if got.String() != want.String() {
			t.Errorf("json:\n%q\nwant\n%q", got.String(), want.String())
		}
	}
}

// TestRowWritersEscape: CSV for a terminal escapes control characters,
// escape sequences and invalid UTF-8; JSON writes C1 and DEL as \u
// escapes, which decode to the same value.
func TestRowWritersEscape(t *testing.T) {
	t.Parallel()
	const hostile = "a\x1b]0;title\x07\x1b[2J\u009b1m\u0085\x7f\r\n\tz"
	res := &Result{Columns: []string{"c\x1b[1m"}, Rows: [][]any{{hostile}, {"x\x9by"}, {[]byte("\x1b[31m")}}}
	var b bytes.Buffer
	writeRows(t, NewCSVWriter(&b, true), res)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\x7f\r\t\u009b\u0085") || bytes.ContainsRune(b.Bytes(), 0x9b) || strings.Count(out, "\n") != 4 {
		t.Fatalf("control characters left: %q", out)
	}
	for _, want := range []string{`c\x1b[1m`, `a\x1b]0;title\x07\x1b[2J\u009b1m\u0085\x7f\r\n\tz`, `x\x9by`, `\x1b[31m`} {
		if !strings.Contains(out, want) {
			t.Errorf("csv lacks %s: %q", want, out)
		}
	}

	b.Reset()
	writeRows(t, NewCSVWriter(&b, false), res)
	if !strings.Contains(b.String(), hostile[:len(hostile)-5]) {
		t.Fatalf("csv without escape changed the value: %q", b.String())
	}

	b.Reset()
	writeRows(t, NewJSONWriter(&b), &Result{Columns: res.Columns, Rows: res.Rows[:1]})
	if strings.ContainsAny(b.String(), "\x1b\x07\x7f\u009b\u0085") {
		t.Fatalf("json holds raw control characters: %q", b.String())
	}
	var back []map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back) != 1 || back[0]["c\x1b[1m"] != hostile {
		t.Fatalf("json does not decode to the value: %v %q", err, back)
	}
}

// TestHiddenCharactersEscaped: invisible format characters (a right-to-left
// override, zero-width characters, a byte-order mark, tag characters) are
// shown as escapes in the table and in CSV for a terminal, and written as
// \u escapes in JSON, which decode to the same value; other text is left
// alone. Before, they reached the auditor's terminal raw, where an override
// makes a cell read other than what it holds.
func TestHiddenCharactersEscaped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, shown string
	}{
		{"right-to-left override", "rm -rf /tmp/\u202efdp.exe", `rm -rf /tmp/\u202efdp.exe`},
		{"isolates and marks", "a\u2066b\u2069c\u200fd\u061ce", `a\u2066b\u2069c\u200fd\u061ce`},
		{"zero-width space and joiner", "cu\u200brl\u200d", `cu\u200brl\u200d`},
		{"byte-order mark", "\ufeffok", `\ufeffok`},
		{"tag characters", "hi\U000E0041\U000E007F", `hi\U000e0041\U000e007f`},
		{"plain text", "ünï 中文 🙂 done", "ünï 中文 🙂 done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &Result{Columns: []string{"v"}, Rows: [][]any{{tt.in}}}
			var table bytes.Buffer
			if err := res.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), "\n"+tt.shown+"\n") {
				t.Errorf("table shows %q, want the line %q", table.String(), tt.shown)
			}
			var csvOut bytes.Buffer
			writeRows(t, NewCSVWriter(&csvOut, true), res)
			if !strings.Contains(csvOut.String(), tt.shown) {
				t.Errorf("csv for a terminal: %q, want %q", csvOut.String(), tt.shown)
			}
			var js bytes.Buffer
			writeRows(t, NewJSONWriter(&js), res)
			if tt.in != tt.shown && strings.ContainsFunc(js.String(), func(r rune) bool { return r > 0x7f && unicode.Is(unicode.Cf, r) }) {
				t.Errorf("json holds a raw format character: %q", js.String())
			}
			var back []map[string]string
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 1 || back[0]["v"] != tt.in {
				t.Errorf("json does not decode to the value: %v %q", err, back)
			}
		})
	}
}

package libsqlhttp

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzAnswer serves any body as the server's answer to a query and to a
// multi-statement exec (the library's batch path): the client library
// behind the guard returns rows or an error (one of too many values, cut
// while it is read, included), and never takes the process down.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		`{"baton":null,"results":[]}`,
		execAnswer(`[[{"type":"integer","value":"1"}]]`),
		execAnswer(`[[{"type":"integer","value":1}]]`),
		execAnswer(`[[]]`),
		execAnswer(`[[{"type":"blob","base64":"AAEC"},{"type":"float","value":1.5}]]`),
		`{"results":[{"type":"ok","response":{"type":"batch","result":{"step_results":[null,null,null],"step_errors":[null,null,null]}}}]}`,
		`{"results":[{"type":"ok","response":{"type":"batch","result":{"step_results":[],"step_errors":[]}}}]}`,
		`{"results":[{"type":"error","error":{"message":"\u001b[2J"}}]}`,
		`{"baton":"b","base_url":"http://127.0.0.1:1","results":[{"type":"ok","response":{"type":"execute","result":{}}}]}`,
		`{"results":[{"type":"ok"}]}`,
		execAnswer(`[` + strings.TrimSuffix(strings.Repeat(`[{"type":"null"}],`, 400), ",") + `]`),
	} {
		f.Add([]byte(s))
	}
	var (
		mu   sync.Mutex // guards body: one answer at a time
		body []byte
	)
	url, _ := serve(f, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		b := body
		mu.Unlock()
		w.Write(b)
	})
	// Few values, so that answers past the bound are explored too.
	db := openDB(f, url, Limits{MaxAnswerBytes: 1 << 20, MaxAnswerValues: 1000})
	f.Fuzz(func(t *testing.T, answer []byte) {
		mu.Lock()
		body = answer
		mu.Unlock()
		ctx := context.Background()
		rows, err := db.QueryContext(ctx, "SELECT 1")
		if err == nil {
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				_ = rows.Scan(ptrs...)
			}
			for rows.NextResultSet() {
				for rows.Next() {
				}
			}
			_ = rows.Err()
			rows.Close()
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE a (x); CREATE TABLE b (y)"); err != nil {
			checkPrintable(t, err)
		}
		var v any
		if err := db.QueryRowContext(ctx, "SELECT ?", 1).Scan(&v); err != nil && !errors.Is(err, sql.ErrNoRows) {
			checkPrintable(t, err)
		}
	})
}

// checkPrintable fails t when err's text holds anything printable would
// have escaped.
func checkPrintable(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if !utf8.ValidString(msg) {
		t.Fatalf("error text not UTF-8: %q", msg)
	}
	for _, r := range msg {
		if !unicode.IsPrint(r) {
			t.Fatalf("error text holds %U: %q", r, msg)
		}
	}
}

// FuzzPrintable: the text is valid UTF-8, printable only, and bounded.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"ok", "\x1b[2J\r\n", "\xff\u202e", strings.Repeat("\x00", 2000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := printable(s)
		if len(got) > maxErrorText+64 {
			t.Fatalf("%d bytes out", len(got))
		}
		checkPrintable(t, errors.New(got))
		if len(s) < maxErrorText/16 && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) && utf8.ValidString(s) && got != s {
			t.Fatalf("printable text changed: %q -> %q", s, got)
		}
	})
}

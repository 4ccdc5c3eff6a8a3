package libsqlhttp

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serve answers every request with answer on a random loopback port
// until the test ends; it returns the URL and a count of requests.
func serve(t testing.TB, answer http.HandlerFunc) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.Copy(io.Discard, r.Body)
		answer(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), &n
}

// openDB opens a database on url through Open with lim.
func openDB(t testing.TB, url string, lim Limits) *sql.DB {
	t.Helper()
	c, err := Open(url, "tok", lim)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}

// execAnswer is the answer to one execute of a query returning rows.
func execAnswer(rows string) string {
	return `{"baton":null,"results":[{"type":"ok","response":{"type":"execute","result":{"cols":[{"name":"v"}],"rows":` + rows + `}}}]}`
}

// TestGuardErrors: each way a server breaks the rules ends the request with
// its own error, and the connection pool keeps working.
func TestGuardErrors(t *testing.T) {
	otherURL, otherHits := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, execAnswer(`[[{"type":"integer","value":"1"}]]`))
	})
	big := execAnswer(`[[{"type":"text","value":"` + strings.Repeat("a", 4096) + `"}]]`)
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
		want   error
	}{
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
		}, ErrRedirect},
		{"base_url elsewhere", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, strings.Replace(execAnswer(`[[{"type":"integer","value":"1"}]]`), `"baton":null`, `"baton":"b","base_url":"`+otherURL+`"`, 1))
		}, ErrForeignServer},
		{"answer over the bound", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, big)
		}, ErrAnswerTooLarge},
		{"announced over the bound", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100000")
			io.WriteString(w, big)
		}, ErrAnswerTooLarge},
		{"no results", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"baton":null,"results":[]}`)
		}, ErrMalformedAnswer},
		{"short row", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"baton":null,"results":[{"type":"ok","response":{"type":"execute","result":{"cols":[{"name":"a"},{"name":"b"}],"rows":[[]]}}}]}`)
		}, ErrMalformedAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := serve(t, tc.answer)
			db := openDB(t, url, Limits{MaxAnswerBytes: 1024})
			ctx := context.Background()
			// Two statements on one connection: a base_url takes effect
			// on the second.
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var v any
			err = conn.QueryRowContext(ctx, "SELECT 1").Scan(&v)
			if err == nil {
				err = conn.QueryRowContext(ctx, "SELECT 2").Scan(&v)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the other server got %d requests", n)
	}
}

// TestGuardKeepsTheAnswer: an answer within the bound, of exactly the
// bound, and a base_url naming the same server pass unchanged.
func TestGuardKeepsTheAnswer(t *testing.T) {
	var self string
	url, hits := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, strings.Replace(execAnswer(`[[{"type":"text","value":"kept"}]]`), `"baton":null`, `"baton":"b","base_url":"`+self+`"`, 1))
	})
	self = url
	size := int64(len(strings.Replace(execAnswer(`[[{"type":"text","value":"kept"}]]`), `"baton":null`, `"baton":"b","base_url":"`+self+`"`, 1)))
	db := openDB(t, url, Limits{MaxAnswerBytes: size})
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for range 2 {
		var v string
		if err := conn.QueryRowContext(ctx, "SELECT 'kept'").Scan(&v); err != nil || v != "kept" {
			t.Fatalf("got %q, %v", v, err)
		}
	}
	if hits.Load() < 2 {
		t.Fatalf("%d requests", hits.Load())
	}
}

// TestGuardForeignBaseURLDropsConn: a connection an answer's base_url
// pointed at another server is dropped once the request there is refused,
// so that the pool's next statement, on a new connection, reaches the
// configured server (kept, the library sent every later statement of that
// connection elsewhere, even after its stream closed, and each was refused).
func TestGuardForeignBaseURLDropsConn(t *testing.T) {
	otherURL, otherHits := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, execAnswer(`[[{"type":"integer","value":"1"}]]`))
	})
	var first atomic.Bool
	url, _ := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		answer := execAnswer(`[[{"type":"integer","value":"1"}]]`)
		if first.CompareAndSwap(false, true) {
			answer = strings.Replace(answer, `"baton":null`, `"baton":"b","base_url":"`+otherURL+`"`, 1)
		}
		io.WriteString(w, answer)
	})
	db := openDB(t, url, Limits{})
	db.SetMaxOpenConns(1) // every statement on the one connection the pool keeps
	ctx := context.Background()
	var v any
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
		t.Fatalf("first statement: %v", err)
	}
	for i, want := range []error{ErrForeignServer, nil, nil} {
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); !errors.Is(err, want) {
			t.Fatalf("statement %d after the base_url: got %v, want %v", i+1, err, want)
		}
	}
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the other server got %d requests", n)
	}
}

// TestGuardBoundsTime: a server that accepts and never answers costs one
// RequestTimeout per request, the library's deadline-less stream closes too.
func TestGuardBoundsTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	db := openDB(t, "http://"+ln.Addr().String(), Limits{RequestTimeout: 200 * time.Millisecond})
	var v any
	err = db.QueryRowContext(context.Background(), "SELECT 1").Scan(&v)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a deadline", err)
	}
}

// TestOtherClientsUnchanged: a request through http.DefaultClient that is
// not a guarded connector's still follows redirects, unbounded.
func TestOtherClientsUnchanged(t *testing.T) {
	target, _ := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, strings.Repeat("x", 4096))
	})
	from, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	})
	openDB(t, from, Limits{MaxAnswerBytes: 16})
	resp, err := http.Get(from)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || len(b) != 4096 {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
}

// TestPrintable: what a server says is escaped and cut.
func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"a\nb", "a | b"},
		{"\x1b[2J\r", `\u001b[2J\u000d`},
		{"\u202eX\u200b", `\u202eX\u200b`},
		{"\xff\xfe ok \ufffd", `\xff\xfe ok ` + "\ufffd"},
		{"\U000e0041", `\U000e0041`},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := printable(strings.Repeat("y", 10*maxErrorText))
	if !strings.HasSuffix(long, "... (10240 bytes)") || len(long) > maxErrorText+32 {
		t.Errorf("long text became %d bytes ending %q", len(long), long[len(long)-20:])
	}
}

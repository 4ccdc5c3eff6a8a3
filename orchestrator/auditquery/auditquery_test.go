package auditquery

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// childEnv makes this test binary a query child (TestMain).
const childEnv = "EVOCLAW_AUDITQUERY_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(Child(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// auditDB makes an audit database (a Store's, closed again).
func auditDB(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// testRunner runs children of this test binary.
func testRunner(t *testing.T, memory int64) *Runner {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A child built with -race would sleep a second at exit.
	return &Runner{Exe: exe, Env: []string{childEnv + "=1", "GORACE=atexit_sleep_ms=0"}, MemoryBytes: memory}
}

type runFunc func(context.Context, Request) (*Result, error)

// runners are the two ways to run a statement; both must answer alike.
func runners(t *testing.T) map[string]runFunc {
	return map[string]runFunc{"local": Local, "child": testRunner(t, 0).Run}
}

// TestLocalAndChildAnswerAlike: every kind of answer, in this process and
// in a child, the values as the API shows them (written out by hand).
func TestLocalAndChildAnswerAlike(t *testing.T) {
	path := auditDB(t)
	for _, tc := range []struct {
		name      string
		req       Request
		rows      string // the rows as JSON
		truncated bool
		kind      string // the failure's kind, or ""
	}{
		{name: "values", req: Request{SQL: "SELECT 1, -2.5, 9223372036854775807, -9223372036854775808, NULL, x'ff00', 'text', 1e999, 'a\"<b>'"},
			rows: `[[1,-2.5,9223372036854775807,-9223372036854775808,null,"x'ff00'","text","+Inf","a\"\u003cb\u003e"]]`},
		{name: "no rows", req: Request{SQL: "SELECT tool FROM tool_calls"}, rows: `[]`},
		{name: "argument", req: Request{SQL: "SELECT ?", Args: []string{"it's"}}, rows: `[["it's"]]`},
		{name: "rows bound", req: Request{SQL: "SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3", Rows: 2}, rows: `[[1],[2]]`, truncated: true},
		{name: "bytes bound", req: Request{SQL: "SELECT 'abcd' UNION ALL SELECT 'efgh'", Bytes: 6}, rows: `[["abcd"]]`, truncated: true},
		{name: "write", req: Request{SQL: "DELETE FROM tool_calls"}, kind: KindReadOnly},
		{name: "attach", req: Request{SQL: "ATTACH DATABASE 'other.db' AS o"}, kind: KindReadOnly},
		{name: "syntax", req: Request{SQL: "SELEC 1"}, kind: KindStatement},
		{name: "two statements", req: Request{SQL: "SELECT 1; SELECT 2"}, kind: KindStatement},
		{name: "value over the bound", req: Request{SQL: "SELECT zeroblob(1048577)", ValueBytes: 1 << 20}, kind: KindTooBig},
		{name: "value at the bound", req: Request{SQL: "SELECT length(zeroblob(1048576))", ValueBytes: 1 << 20}, rows: `[[1048576]]`},
		{name: "temporary storage in files", req: Request{SQL: "PRAGMA temp_store"}, rows: `[[0]]`},
		{name: "temporary storage in memory", req: Request{SQL: "PRAGMA temp_store", TempInMemory: true}, rows: `[[2]]`},
		{name: "time bound", req: Request{SQL: "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n) SELECT count(*) FROM n", Timeout: 300 * time.Millisecond}, kind: KindTimeout},
		{name: "no database", req: Request{Path: filepath.Join(t.TempDir(), "none.db"), SQL: "SELECT 1"}, kind: KindUnavailable},
	} {
		for name, run := range runners(t) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				req := tc.req
				if req.Path == "" {
					req.Path = path
				}
				start := time.Now()
				res, err := run(context.Background(), req)
				if tc.kind != "" {
					var qe *Error
					if !errors.As(err, &qe) || qe.Kind != tc.kind {
						t.Fatalf("got %+v, %v; want a %s error", res, err, tc.kind)
					}
					if tc.kind == KindTimeout && time.Since(start) > 5*time.Second {
						t.Fatalf("a 300 ms bound ended after %v", time.Since(start))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(res.Rows)
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != tc.rows || res.Truncated != tc.truncated {
					t.Fatalf("rows %s truncated %v, want %s %v", b, res.Truncated, tc.rows, tc.truncated)
				}
				if res.Columns == nil {
					t.Fatal("columns nil, want a list")
				}
			})
		}
	}
}

// TestChildBoundsMemory: a statement whose row needs more memory than the
// child may take (every value within the value bound) ends the child's
// run, not this process, and says so.
func TestChildBoundsMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the data-size limit is Linux's")
	}
	path := auditDB(t)
	cols := slices.Repeat([]string{"zeroblob(1000000)"}, 300) // 300 MB in one row
	req := Request{Path: path, SQL: "SELECT " + strings.Join(cols, ", "), ValueBytes: 1 << 20, Timeout: 20 * time.Second}
	res, err := testRunner(t, 64<<20).Run(context.Background(), req)
	var qe *Error
	if !errors.As(err, &qe) || qe.Kind != KindMemory {
		t.Fatalf("got %v, %v; want a %s error", res, err, KindMemory)
	}
	// A statement within the bound runs in the same kind of child.
	req.SQL = "SELECT length(" + strings.Join(slices.Repeat([]string{"printf('%.*c', 1000000, 'x')"}, 10), " || ") + ")"
	req.ValueBytes = 16 << 20
	res, err = testRunner(t, 0).Run(context.Background(), req)
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != json.Number("10000000") {
		t.Fatalf("got %+v, %v; want [[10000000]]", res, err)
	}
}

// TestChildEndsWithTheCallersContext: a deadline shorter than the
// request's own bound ends the run by that deadline.
func TestChildEndsWithTheCallersContext(t *testing.T) {
	path := auditDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := testRunner(t, 0).Run(ctx, Request{Path: path, Timeout: time.Minute,
		SQL: "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n) SELECT count(*) FROM n"})
	var qe *Error
	if !errors.As(err, &qe) || qe.Kind != KindTimeout {
		t.Fatalf("got %v; want a %s error", err, KindTimeout)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("ended after %v", d)
	}
}

// TestChildThatFails: a child that dies without an answer, or answers
// nonsense, is a failure of its own kind, with what it printed.
func TestChildThatFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Runner
		want string
	}{
		{"exits", Runner{Exe: "/bin/sh", Args: []string{"-c", "echo broken >&2; exit 3"}}, "broken"},
		{"answers nonsense", Runner{Exe: "/bin/sh", Args: []string{"-c", "echo '{\"rows\":1}'"}}, "no answer"},
		{"out of memory", Runner{Exe: "/bin/sh", Args: []string{"-c", "echo 'fatal error: runtime: cannot allocate memory' >&2; exit 2"}}, "narrow it"},
		{"missing", Runner{Exe: filepath.Join(t.TempDir(), "gone")}, "no such file or directory"},
		{"killed", Runner{Exe: "/bin/sh", Args: []string{"-c", "kill -KILL $$"}}, "ran short of memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat("/bin/sh"); err != nil {
				t.Skip("no /bin/sh")
			}
			_, err := tc.r.Run(context.Background(), Request{SQL: "SELECT 1", Timeout: 5 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestChildGetsNoSecrets: the node's environment (tokens, keys) stays
// with the node.
func TestChildGetsNoSecrets(t *testing.T) {
	t.Setenv("EVOCLAW_COLD_AUTH_TOKEN", "secret")
	t.Setenv("TMPDIR", "/somewhere")
	env := passEnv()
	if slices.ContainsFunc(env, func(kv string) bool { return strings.Contains(kv, "secret") }) || !slices.Contains(env, "TMPDIR=/somewhere") {
		t.Fatalf("child environment %q: want TMPDIR and no secret", env)
	}
}

// BenchmarkRun: what running a statement in a child costs over running it
// in the node: a small statement, and a report over a few rows. With
// EVOCLAW_BIN set, the children are also that evoclaw binary's.
func BenchmarkRun(b *testing.B) {
	path := auditDB(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	child := &Runner{Exe: exe, Env: []string{childEnv + "=1", "GORACE=atexit_sleep_ms=0"}}
	report, _ := sqlite.ReportByName("tools")
	for _, q := range []struct{ name, sql string }{{"count", "SELECT count(*) FROM tool_calls"}, {"report", report.Query}} {
		runs := map[string]runFunc{"local": Local, "child": child.Run}
		if bin := os.Getenv("EVOCLAW_BIN"); bin != "" {
			// The evoclaw binary itself (a release build: go run ./cmd/release).
			runs["evoclaw"] = (&Runner{Exe: bin, Args: []string{ChildCommand}}).Run
		}
		for name, run := range runs {
			b.Run(q.name+"/"+name, func(b *testing.B) {
				for b.Loop() {
					if _, err := run(context.Background(), Request{Path: path, SQL: q.sql, Timeout: 10 * time.Second}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestChildRefusesABadRequest: a child whose request does not decode
// answers why, in its reply, and runs nothing.
func TestChildRefusesABadRequest(t *testing.T) {
	for _, in := range []string{"", "{", `{"sql": 1}`, "[]"} {
		var out strings.Builder
		if code := Child(strings.NewReader(in), &out); code != 0 {
			t.Fatalf("Child(%q) exit %d, want 0 with a reply", in, code)
		}
		var reply childReply
		if err := json.Unmarshal([]byte(out.String()), &reply); err != nil || reply.Result != nil || reply.Error == nil ||
			reply.Error.Kind != KindUnavailable || !strings.Contains(reply.Error.Message, "read the query") {
			t.Fatalf("Child(%q) replied %s (%v), want an %s error saying it could not read the query", in, out.String(), err, KindUnavailable)
		}
	}
}

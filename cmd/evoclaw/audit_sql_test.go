package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// endlessRows is a statement whose rows never end, 1 KB each.
const endlessRows = `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)
	SELECT x, hex(zeroblob(500)) AS pad FROM n`

// cancelAfter is a writer that counts what it gets and cancels the
// command's context once it holds limit bytes: the rows reached it while
// the query was still running.
type cancelAfter struct {
	mu     sync.Mutex
	n      int
	limit  int
	cancel context.CancelFunc
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += len(p)
	if c.n >= c.limit {
		c.cancel()
	}
	return len(p), nil
}

// TestAuditSQLStreams: --csv and --json write rows as the query produces
// them and hold none: an endless query's rows reach stdout while it runs
// (here 4 MiB of them, far below the 100,000-row cap of a held result,
// which the old code reached without writing a byte), and an interrupt
// ends it with exit 130's error.
func TestAuditSQLStreams(t *testing.T) {
	dir := auditDir(t, 1)
	for _, format := range []string{"--csv", "--json"} {
		t.Run(format, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &cancelAfter{limit: 4 << 20, cancel: cancel}
			start := time.Now()
			err := cmdAuditSQL(ctx, []string{"--data-dir", dir, format, "--timeout", "0", endlessRows}, w, io.Discard)
			if !errors.Is(err, errInterrupted) {
				t.Fatalf("got %v after %d bytes, want errInterrupted", err, w.n)
			}
			if w.n < w.limit {
				t.Fatalf("%d bytes written, want at least %d before the end", w.n, w.limit)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

// TestAuditSQLYieldsToTheNode: a running `evoclaw audit sql` has a lower
// priority (nice 10) and comes first for the kernel's out-of-memory
// killer (oom_score_adj 1000), as the node's own query children do: its
// statement can take every core and, through SQLite's temporary files on
// a tmpfs /tmp, memory that the killer would not count as its own (a sort
// of made-up rows spilled 3.8 GB in 20 s on a test machine).
func TestAuditSQLYieldsToTheNode(t *testing.T) {
	if _, err := os.Stat("/proc/self/oom_score_adj"); err != nil {
		t.Skip("no /proc/self/oom_score_adj: Linux only")
	}
	dir := auditDir(t, 1)
	p, _ := startProc(t, procSpec{Ready: regexp.MustCompile(`^x,pad$`)}, "audit", "sql", "--data-dir", dir, "--csv", "--timeout", "30s", endlessRows)
	defer p.kill()
	pid := p.cmd.Process.Pid
	adj, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
	if err != nil || strings.TrimSpace(string(adj)) != "1000" {
		t.Errorf("oom_score_adj %q (%v), want 1000", adj, err)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which ends with the last ')':
	// nice is the 19th field of the line, the 17th of these.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 17 || fields[16] != "10" {
		t.Errorf("nice of the running audit sql: fields %q, want 10", fields)
	}
}

// TestAuditSQLTimeout: --timeout ends an endless query with a clear error
// and exit 1; it is on by default; a negative one is a usage error.
func TestAuditSQLTimeout(t *testing.T) {
	dir := auditDir(t, 1)
	const endless = `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n`
	start := time.Now()
	code, out, errOut := runArgs("audit", "sql", "--data-dir", dir, "--timeout", "500ms", endless)
	if code != 1 || !strings.Contains(errOut, "ran longer than --timeout 500ms") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("stopped after %v", d)
	}
	code, _, errOut = runArgs("audit", "report", "tools", "--data-dir", dir, "--timeout", "1ns")
	if code != 1 || !strings.Contains(errOut, "--timeout") {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	if code, _, _ := runArgs("audit", "sql", "--data-dir", dir, "--timeout", "-1s", "SELECT 1"); code != 2 {
		t.Fatalf("negative timeout: exit %d, want 2", code)
	}
	if !strings.Contains(auditUsage, "--timeout") || defaultAuditQueryTimeout != time.Minute {
		t.Fatal("default timeout or usage changed: update docs/AUDIT.md")
	}
}

// TestAuditRowsFlagsExclusive: --json with --csv is a usage error.
func TestAuditRowsFlagsExclusive(t *testing.T) {
	dir := auditDir(t, 1)
	for _, args := range [][]string{
		{"audit", "sql", "--data-dir", dir, "--json", "--csv", "SELECT 1"},
		{"audit", "report", "tools", "--data-dir", dir, "--csv", "--json"},
	} {
		code, out, errOut := runArgs(args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "--json and --csv exclude each other") {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
	}
}

// hostile is tool output that would drive a terminal: OSC (set the
// title), CSI (colour, clear), BEL, C1 CSI, a lone 8-bit CSI byte.
const hostile = "ok\x1b]0;pwned\x07\x1b[31mred\x1b[2J\u009b1mc1\x7f"

// escapeDir returns a data directory whose one tool call has hostile
// output (and one invalid UTF-8 byte, which the store replaces).
func escapeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, Tool: "shell", Status: persistence.StatusSuccess, ResultExcerpt: hostile}
	if err := s.RecordToolCall(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAuditSQLCSVEscapesOnTerminal: CSV written to a terminal has its
// control characters escaped as the table has; written to a file or a
// pipe it is exact. JSON is harmless either way (C1 and DEL as \u).
func TestAuditSQLCSVEscapesOnTerminal(t *testing.T) {
	dir := escapeDir(t)
	q := "SELECT result_excerpt, CAST(x'41ff9b42' AS TEXT) AS raw FROM tool_calls"

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	var got bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(&got, ptmx)
		close(done)
	}()
	var errb bytes.Buffer
	code := run([]string{"audit", "sql", "--data-dir", dir, "--csv", q}, tty, &errb)
	tty.Close()
	<-done
	out := got.String()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.ContainsAny(out, "\x1b\x07\x7f\u009b") || bytes.ContainsAny(got.Bytes(), "\x9b\xff") {
		t.Fatalf("control characters reached the terminal: %q", out)
	}
	for _, want := range []string{`ok\x1b]0;pwned\x07\x1b[31mred\x1b[2J\u009b1mc1\x7f`, `A\xff\x9bB`} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %s: %q", want, out)
		}
	}

	// The table escapes too, a lone 0x9b byte included.
	code, out, errOut := runArgs("audit", "sql", "--data-dir", dir, q)
	if code != 0 || strings.ContainsAny(out, "\x1b\x07\x7f\u009b") || strings.ContainsRune(out, 0x9b) || strings.Contains(out, "\x9b") || strings.Contains(out, "\xff") ||
		!strings.Contains(out, `A\xff\x9bB`) {
		t.Fatalf("table: exit %d %q %s", code, out, errOut)
	}

	code, out, errOut = runArgs("audit", "sql", "--data-dir", dir, "--csv", q)
	if code != 0 || !strings.Contains(out, hostile) || !strings.Contains(out, "A\xff\x9bB") {
		t.Fatalf("not a terminal: CSV must be exact: exit %d %q %s", code, out, errOut)
	}
	code, out, errOut = runArgs("audit", "sql", "--data-dir", dir, "--json", q)
	if code != 0 || strings.ContainsAny(out, "\x1b\x07\x7f\u009b") || !strings.Contains(out, `\u001b]0;pwned\u0007`) || !strings.Contains(out, `\u009b1mc1\u007f`) {
		t.Fatalf("json: exit %d %q %s", code, out, errOut)
	}
}

// TestTableRowsCutLikeWriteTable: the table output holds cells cut to
// what it shows, and prints them exactly as it prints the whole values.
func TestTableRowsCutLikeWriteTable(t *testing.T) {
	long := strings.Repeat("é", 200)
	vals := []any{
		nil, int64(7), 1.5, "short", long, strings.Repeat("a", 80), strings.Repeat("a", 81), strings.Repeat("a", 82),
		strings.Repeat("\x1b", 100), []byte(long), []byte{0xff}, bytes.Repeat([]byte{0xff}, 40), bytes.Repeat([]byte{0xff}, 41),
		append(bytes.Repeat([]byte("a"), 100), 0xff), []byte{},
	}
	full := sqlite.Result{Columns: []string{"v"}}
	for _, v := range vals {
		full.Rows = append(full.Rows, []any{v})
	}
	var want, got bytes.Buffer
	if err := full.WriteTable(&want); err != nil {
		t.Fatal(err)
	}
	tr := &tableRows{w: &got}
	if err := tr.Columns(full.Columns); err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if err := tr.Row([]any{v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("cut table differs:\n%s\nwant:\n%s", got.String(), want.String())
	}
	if tr.size > int64(len(vals))*(tableCellOverhead+4*tableCutRunes) {
		t.Fatalf("held %d bytes", tr.size)
	}
}

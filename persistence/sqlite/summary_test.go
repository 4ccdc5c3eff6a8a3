package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// summaryBase is the first day the summary tests write records on.
var summaryBase = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// randomToolCall returns a tool call at, with a tool, agent, status,
// error type and elapsed time drawn from r, some of them absent (NULL),
// and ties in elapsed time on purpose.
func randomToolCall(r *rand.Rand, at time.Time) persistence.ToolCall {
	c := persistence.ToolCall{
		Time:      at,
		Node:      "n1",
		Side:      persistence.SideOrchestrator,
		Tool:      fmt.Sprintf("tool-%d", r.IntN(4)),
		Status:    persistence.StatusSuccess,
		ElapsedMs: int64(r.IntN(60)),
		RequestID: fmt.Sprintf("req-%d", r.IntN(1000)),
	}
	if r.IntN(5) > 0 {
		c.AgentID = fmt.Sprintf("agent-%d", r.IntN(3))
	}
	if r.IntN(4) == 0 {
		c.Status = persistence.StatusError
		c.Error = "failed"
		if r.IntN(5) > 0 {
			c.ErrorType = []string{"timeout", "execution_failed", "interrupted"}[r.IntN(3)]
		}
	}
	return c
}

// randomLLMCall returns an LLM call at, drawn from r.
func randomLLMCall(r *rand.Rand, at time.Time) persistence.LLMCall {
	c := persistence.LLMCall{
		Time:         at,
		Node:         "n1",
		Provider:     []string{"openai", "local"}[r.IntN(2)],
		InputTokens:  int64(r.IntN(1000)),
		OutputTokens: int64(r.IntN(100)),
		LatencyMs:    int64(r.IntN(3000)),
		Status:       persistence.StatusSuccess,
	}
	if r.IntN(6) > 0 {
		c.ConversationID = fmt.Sprintf("conv-%d", r.IntN(7))
	}
	if r.IntN(4) > 0 {
		c.Model = fmt.Sprintf("model-%d", r.IntN(2))
	}
	if r.IntN(8) == 0 {
		c.Status, c.ErrorType, c.Error = persistence.StatusError, "rate_limit", "slow down"
	}
	return c
}

// writeRandom writes n tool calls and about n/2 LLM calls drawn from seed
// with writers concurrent writers, through every way the Store takes them.
// The i-th record is stamped about i/n of the five days after summaryBase
// (give or take two hours), so records come roughly in time order, as
// retention expects, over several days.
func writeRandom(t *testing.T, s *Store, seed uint64, n, writers int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := w; i < n; i += writers {
				span := 5 * 24 * time.Hour
				at := summaryBase.Add(span*time.Duration(i)/time.Duration(n) + time.Duration(r.IntN(4*3600)-2*3600)*time.Second)
				if at.Before(summaryBase) {
					at = summaryBase
				}
				var err error
				switch i % 4 {
				case 0, 1:
					err = s.RecordToolCall(ctx, randomToolCall(r, at))
				case 2:
					done := make(chan error, 1)
					if err = s.QueueToolCall(randomToolCall(r, at), func(err error) { done <- err }); err == nil {
						err = <-done
					}
				case 3:
					err = s.RecordToolCall(ctx, randomToolCall(r, at))
					if err == nil {
						err = s.RecordLLMCall(ctx, randomLLMCall(r, at))
					}
				}
				if i%6 == 5 && err == nil {
					err = s.RecordLLMCall(ctx, randomLLMCall(r, at))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// reportRows runs q read-only on path and returns its rows as text, the
// list of tools of the errors report sorted (group_concat's order is the
// scan's).
func reportRows(t *testing.T, path, name, q string) []string {
	t.Helper()
	res, err := QueryReadOnly(context.Background(), path, q)
	if err != nil {
		t.Fatalf("report %s: %v", name, err)
	}
	out := make([]string, 0, len(res.Rows))
	for _, row := range res.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = fmt.Sprintf("%T:%v", v, v)
			if s, ok := v.(string); ok && name == "errors" && res.Columns[i] == "tools" {
				tools := strings.Split(s, ",")
				slices.Sort(tools)
				cells[i] = strings.Join(tools, ",")
			}
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return out
}

// checkSummaries fails unless every report that reads the summaries
// answers exactly what its Raw query computes from the records, and
// returns how many rows the tools report has.
func checkSummaries(t *testing.T, path string) int {
	t.Helper()
	toolRows := 0
	for _, r := range Reports {
		if r.Raw == "" {
			continue
		}
		got, want := reportRows(t, path, r.Name, r.Query), reportRows(t, path, r.Name, r.Raw)
		if !slices.Equal(got, want) {
			t.Errorf("report %s from the summaries:\n%s\nfrom the records:\n%s", r.Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if r.Name == "tools" {
			toolRows = len(got)
		}
	}
	if err := VerifySummaries(context.Background(), path); err != nil {
		t.Errorf("VerifySummaries: %v", err)
	}
	return toolRows
}

// The summaries answer every report exactly as the records do, after
// writes by one or many concurrent writers, after reopening, and after
// retention cut into the middle of a day.
func TestSummariesMatchRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		seed      uint64
		n         int
		writers   int
		pruneTo   time.Duration // MaxAge cut, from summaryBase+5 days
		pruneRuns int
	}{
		{"one writer", 1, 300, 1, 0, 0},
		{"sixteen writers", 2, 800, 16, 0, 0},
		{"pruned mid-day", 3, 600, 8, 3*24*time.Hour + 7*time.Hour, 3},
		{"pruned in small batches", 4, 400, 4, 4*24*time.Hour - 5*time.Hour, 6},
		{"pruned to nothing", 5, 200, 2, time.Nanosecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, path := openStore(t, Options{})
			writeRandom(t, s, tt.seed, tt.n, tt.writers)
			if rows := checkSummaries(t, path); rows == 0 {
				t.Fatal("the tools report is empty: the test wrote nothing")
			}
			now := summaryBase.Add(5 * 24 * time.Hour)
			for run := range tt.pruneRuns {
				res, err := s.Prune(context.Background(), Retention{MaxAge: tt.pruneTo, Batch: tt.n / tt.pruneRuns / 2}, now)
				if err != nil {
					t.Fatal(err)
				}
				if res.Deleted == 0 && run == 0 {
					t.Fatal("prune deleted nothing: the cut is outside the records")
				}
				checkSummaries(t, path)
				// Writing on after a prune keeps them right too.
				writeRandom(t, s, tt.seed+100, 40, 2)
				checkSummaries(t, path)
			}
			s = reopen(t, s, path, Options{})
			writeRandom(t, s, tt.seed+200, 60, 3)
			checkSummaries(t, path)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if rep, err := VerifyChain(context.Background(), path); err != nil || rep.Verified == 0 {
				t.Fatalf("chain after the test: %+v, %v", rep, err)
			}
		})
	}
}

// A transaction that does not commit leaves no summary change behind: not
// when its commit fails, and not when one of its writes fails and the rest
// of its batch is retried.
func TestSummariesRollBackWithTheirBatch(t *testing.T) {
	var failCommits sync.Mutex // held: commits fail
	s, path := openStoreWithCommit(t, Options{}, func(commit func() error, n int) error {
		if failCommits.TryLock() {
			failCommits.Unlock()
			return commit()
		}
		return errors.New("injected commit failure")
	})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(9, 9))
	at := summaryBase.Add(30 * time.Hour)
	for range 50 {
		if err := s.RecordToolCall(ctx, randomToolCall(r, at)); err != nil {
			t.Fatal(err)
		}
	}
	before := reportRows(t, path, "tools", ReportByNameMust("tools").Query)

	// A failed commit: the calls are refused, and no summary moved.
	failCommits.Lock()
	slow := randomToolCall(r, at)
	slow.ElapsedMs = 1 << 40 // would top the slowest report
	if err := s.RecordToolCall(ctx, slow); err == nil {
		t.Fatal("RecordToolCall succeeded through a failing commit")
	}
	if err := s.RecordLLMCall(ctx, randomLLMCall(r, at)); err == nil {
		t.Fatal("RecordLLMCall succeeded through a failing commit")
	}
	failCommits.Unlock()
	if after := reportRows(t, path, "tools", ReportByNameMust("tools").Query); !slices.Equal(before, after) {
		t.Fatalf("a failed commit changed the tools summary:\nbefore %v\nafter  %v", before, after)
	}
	checkSummaries(t, path)

	// A write that fails in a batch: a duplicate record id, queued behind
	// good writes that share its transaction.
	dup := randomToolCall(r, at)
	dup.RecordID = persistence.NewRecordID()
	if err := s.RecordToolCall(ctx, dup); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]error, 8)
	for i := range results {
		c := randomToolCall(r, at)
		c.ElapsedMs = 1<<30 + int64(i)
		if i == 3 {
			c = dup
			c.ElapsedMs = 1 << 41
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.RecordToolCall(ctx, c)
		}()
	}
	wg.Wait()
	for i, err := range results {
		if (err != nil) != (i == 3) {
			t.Errorf("write %d: %v", i, err)
		}
	}
	checkSummaries(t, path)
	if top := reportRows(t, path, "slowest", ReportByNameMust("slowest").Query); len(top) == 0 || strings.Contains(top[0], fmt.Sprint(int64(1)<<41)) {
		t.Errorf("the refused duplicate's elapsed time reached the slowest report: %v", top)
	}
}

// ReportByNameMust is ReportByName for a report that exists.
func ReportByNameMust(name string) Report {
	r, ok := ReportByName(name)
	if !ok {
		panic("no report " + name)
	}
	return r
}

// An upgraded database gets summaries of the records it already holds,
// built in the migration's transaction, and keeps them right as new
// records come.
func TestMigrateV5BuildsSummaries(t *testing.T) {
	t.Parallel()
	path := fixtureV5(t)
	before := countRows(t, path)
	if before == 0 {
		t.Fatal("fixture v5.db holds no tool calls")
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := queryOne(t, path, "SELECT sum(calls) FROM report_tools"); got != before {
		t.Errorf("summaries of the upgraded database count %v tool calls, the table holds %d", got, before)
	}
	checkSummaries(t, path)
	writeRandom(t, s, 7, 40, 2)
	checkSummaries(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// VerifySummaries finds a summary that disagrees with the records.
func TestVerifySummariesFindsDrift(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	writeRandom(t, s, 11, 50, 1)
	if err := VerifySummaries(context.Background(), path); err != nil {
		t.Fatalf("before the change: %v", err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE report_day_tokens SET input_tokens = input_tokens + 1"); err != nil {
		t.Fatal(err)
	}
	err = VerifySummaries(context.Background(), path)
	if !errors.Is(err, ErrSummaryMismatch) || !strings.Contains(err.Error(), "tokens-by-day") {
		t.Fatalf("after changing report_day_tokens: %v, want ErrSummaryMismatch naming tokens-by-day", err)
	}
}

// VerifySummaries reads the summaries and the records in one snapshot: a
// node writing all the while never makes them differ.
func TestVerifySummariesWhileWriting(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	writeRandom(t, s, 21, 50, 1)
	stop := make(chan struct{})
	type result struct {
		checks int
		err    error
	}
	res := make(chan result, 1)
	go func() {
		var r result
		for {
			select {
			case <-stop:
				res <- r
				return
			default:
			}
			if r.err = VerifySummaries(context.Background(), path); r.err != nil {
				res <- r
				return
			}
			r.checks++
		}
	}()
	writeRandom(t, s, 22, 600, 4)
	close(stop)
	r := <-res
	if r.err != nil {
		t.Fatalf("check %d while writing: %v", r.checks+1, r.err)
	}
	if r.checks < 2 {
		t.Fatalf("only %d checks ran while writing", r.checks)
	}
}

// A read-only command reads an older database as it is: ReportSQL gives
// it each report's query over the records, which runs there and agrees
// with the summaries the upgrade then builds.
func TestReportSQLReadsOlderDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := fixtureV5(t)
	// answers runs every report without an argument as ReportSQL says,
	// which must be the query want picks.
	answers := func(stage string, want func(Report) string) map[string][]string {
		out := map[string][]string{}
		for _, r := range Reports {
			if r.Arg != "" {
				continue
			}
			q, err := ReportSQL(ctx, path, r)
			if err != nil {
				t.Fatal(err)
			}
			if q != want(r) {
				t.Fatalf("report %s %s: ReportSQL picked the wrong query", r.Name, stage)
			}
			out[r.Name] = reportRows(t, path, r.Name, q)
		}
		return out
	}
	before := answers("on schema v5", Report.RawQuery)
	if len(before["tools"]) == 0 {
		t.Fatal("the tools report of v5.db is empty")
	}
	s, err := Open(path, Options{}) // upgrades
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after := answers("after the upgrade", func(r Report) string { return r.Query })
	for name, rows := range before {
		if !slices.Equal(rows, after[name]) {
			t.Errorf("report %s: before the upgrade\n%v\nafter\n%v", name, rows, after[name])
		}
	}
}

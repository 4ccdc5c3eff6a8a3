package cold

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// BenchmarkShip measures records per second shipped into a real libSQL
// server on loopback: each iteration ships 10,000 warm records (tool calls,
// LLM calls, messages, events) in batches of DefaultBatchSize into emptied
// cold tables.
func BenchmarkShip(b *testing.B) {
	_, warm, _, c := tiers(b)
	fill(b, warm, 2000) // 10,000 records
	c.cfg.BatchSize = DefaultBatchSize
	ctx := context.Background()
	recs, err := warm.ReadChain(ctx, 0, 10_000)
	if err != nil || len(recs) != 10_000 {
		b.Fatalf("read %d records: %v", len(recs), err)
	}
	if err := c.EnsureSchema(ctx); err != nil {
		b.Fatal(err)
	}
	shipped := 0
	for b.Loop() {
		b.StopTimer()
		conn, err := c.db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "DELETE FROM tool_calls; DELETE FROM llm_calls; DELETE FROM messages; DELETE FROM events; DELETE FROM chains; "+
			"DELETE FROM report_tools; DELETE FROM report_errors; DELETE FROM report_slowest; DELETE FROM report_conversation_tokens; DELETE FROM report_day_tokens"); err != nil {
			b.Fatal(err)
		}
		conn.Close()
		b.StartTimer()
		prev := auditchain.Genesis(warm.ChainID())
		for lo := 0; lo < len(recs); lo += DefaultBatchSize {
			batch := recs[lo:min(lo+DefaultBatchSize, len(recs))]
			if err := c.Ship(ctx, Batch{ChainID: warm.ChainID(), AfterSeq: int64(lo), Prev: prev, Records: batch}); err != nil {
				b.Fatal(err)
			}
			prev, _ = auditchain.ParseDigest(batch[len(batch)-1].Hash)
			shipped += len(batch)
		}
	}
	b.ReportMetric(float64(shipped)/b.Elapsed().Seconds(), "records/s")
}

// coldReportCalls is how many tool calls BenchmarkColdReports ships.
const coldReportCalls = 100_000

// BenchmarkColdReports times the ready-made reports on the cold tier,
// from the summaries its triggers keep and (NAME/raw) from the records,
// after shipping coldReportCalls tool calls over 20 tools, 10 agents and
// 30 days, and a tenth as many LLM calls over 1,000 conversations.
func BenchmarkColdReports(b *testing.B) {
	_, warm, _, c := tiers(b)
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for w := range 16 { // concurrent writers: group commit fills warm quickly
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < coldReportCalls; i += 16 {
				at := start.Add(time.Duration(i) * 30 * 24 * time.Hour / coldReportCalls)
				tc := persistence.ToolCall{Time: at, Node: "n1", Side: persistence.SideOrchestrator, AgentID: fmt.Sprintf("edge-%d", i%10),
					Tool: fmt.Sprintf("tool-%d", i%20), Status: persistence.StatusSuccess, ElapsedMs: int64(i % 1000)}
				if i%17 == 0 {
					tc.Status, tc.ErrorType, tc.Error = persistence.StatusError, "timeout", "took too long"
				}
				if err := warm.RecordToolCall(ctx, tc); err != nil {
					b.Error(err)
					return
				}
				if i%10 == 0 {
					if err := warm.RecordLLMCall(ctx, persistence.LLMCall{Time: at, Node: "n1", ConversationID: fmt.Sprintf("conv-%d", i%1000),
						Provider: "openai", Model: "m", InputTokens: int64(i % 500), OutputTokens: 10, Status: persistence.StatusSuccess}); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	after, prev, err := warm.ChainStart(ctx)
	if err != nil {
		b.Fatal(err)
	}
	head, err := warm.HeadSeq(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for after < head {
		recs, err := warm.ReadChain(ctx, after, min(after+DefaultBatchSize, head))
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Ship(ctx, Batch{ChainID: warm.ChainID(), AfterSeq: after, Prev: prev, Records: recs}); err != nil {
			b.Fatal(err)
		}
		last := recs[len(recs)-1]
		after, prev = last.Seq, mustDigest(b, last.Hash)
	}
	for _, r := range sqlite.Reports {
		if r.Raw == "" {
			continue
		}
		for _, q := range []struct{ name, sql string }{{r.Name, r.Query}, {r.Name + "/raw", r.Raw}} {
			b.Run(q.name, func(b *testing.B) {
				for b.Loop() {
					_, rows, err := c.Query(ctx, q.sql)
					if err != nil {
						b.Fatal(err)
					}
					if len(rows) == 0 {
						b.Fatal("report returned no rows")
					}
				}
			})
		}
	}
}

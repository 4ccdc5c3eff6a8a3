package cold

import (
	"context"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
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

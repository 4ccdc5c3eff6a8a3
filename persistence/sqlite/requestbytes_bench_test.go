package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// BenchmarkFinishLargeReport: a run's begin and finish with a 512 KiB
// report, with the log under its bound and past it (every finish then
// drops the oldest report).
func BenchmarkFinishLargeReport(b *testing.B) {
	for _, bc := range []struct {
		name  string
		bound int64
	}{{"under the bound", 1 << 40}, {"past the bound", 8 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			s, _ := openStore(b, Options{RequestLogBytes: bc.bound})
			report := make([]byte, 512<<10)
			b.SetBytes(int64(len(report)))
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("r%d", i)
				if _, _, err := s.BeginRun(ctx, id, persistence.Run{Tool: "big"}); err != nil {
					b.Fatal(err)
				}
				rec := persistence.ToolCall{Node: "pi", Side: persistence.SideEdge, RequestID: id, Tool: "big", Status: persistence.StatusSuccess}
				if err := s.FinishToolCall(ctx, rec, id, report); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

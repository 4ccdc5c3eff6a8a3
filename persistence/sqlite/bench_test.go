package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
)

// BenchmarkRecordToolCall measures committed records per second for both
// sync modes, with many concurrent writers (group commit at work) and with
// one. records/commit shows how many writes shared a transaction.
func BenchmarkRecordToolCall(b *testing.B) {
	for _, syncMode := range []string{SyncNormal, SyncFull} {
		for _, parallel := range []bool{true, false} {
			name := "sync=" + syncMode + "/serial"
			if parallel {
				name = "sync=" + syncMode + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				var commits atomic.Int64
				s, _ := openStoreWithCommit(b, Options{Sync: syncMode}, func(tx *sql.Tx, n int) error {
					commits.Add(1)
					return tx.Commit()
				})
				c := sampleCall(1)
				c.RecordID = "" // generated per record
				b.ReportAllocs()
				b.ResetTimer()
				if parallel {
					b.SetParallelism(8) // 8×GOMAXPROCS writers
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := s.RecordToolCall(context.Background(), c); err != nil {
								b.Error(err)
								return
							}
						}
					})
				} else {
					for range b.N {
						if err := s.RecordToolCall(context.Background(), c); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N)/float64(max(commits.Load(), 1)), "records/commit")
			})
		}
	}
}

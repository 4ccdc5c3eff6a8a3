package sqlite

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
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
				s, _ := openStoreWithCommit(b, Options{Sync: syncMode}, func(commit func() error, n int) error {
					commits.Add(1)
					return commit()
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

// BenchmarkCommitBatch is the ceiling of group commit: the committer alone
// writing transactions of n tool calls each (records chained, summarized
// and sealed as RecordToolCall's are), with no callers to answer and no
// goroutine hand-offs. ns/op is per record.
func BenchmarkCommitBatch(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			s, _ := openStore(b, Options{})
			c := sampleCall(1)
			ops := make([]*op, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += n {
				for j := range ops {
					c.RecordID, c.Time = "", time.Time{}
					stamp(&c.RecordID, &c.Time)
					args := toolCallArgs(&c)
					ops[j] = &op{apply: func(ctx context.Context, tx dbtx) error {
						return s.insertChained(ctx, tx, "tool_calls", args)
					}}
				}
				if failed, err := s.runTx(ops); failed >= 0 || err != nil {
					b.Fatalf("write %d: %v", failed, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkLoadMessages is what a conversation actor does when it starts:
// load the end of the stored history (RecentMessages with the limit it
// asks for first, whose statement is prepared), of a new conversation
// (none) or of one with ten messages; "bound" asks for one message more,
// which runs the same query with the limit bound as a parameter.
func BenchmarkLoadMessages(b *testing.B) {
	s, _ := openStore(b, Options{})
	ctx := context.Background()
	msgs := make([]persistence.Message, 10)
	for i := range msgs {
		msgs[i] = persistence.Message{Role: "user", Body: []byte(`{"role":"user","content":"hello"}`)}
	}
	if err := s.AppendMessages(ctx, "ten", msgs); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name, conv string
		limit      int
		want       int
	}{
		{"new", "none", RecentPrepared, 0}, {"ten", "ten", RecentPrepared, 10},
		{"new/bound", "none", RecentPrepared + 1, 0}, {"ten/bound", "ten", RecentPrepared + 1, 10},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				got, err := s.RecentMessages(ctx, tc.conv, tc.limit)
				if err != nil || len(got) != tc.want {
					b.Fatalf("RecentMessages(%q, %d) = %d messages, %v; want %d", tc.conv, tc.limit, len(got), err, tc.want)
				}
			}
		})
	}
}

package sqlite

import (
	"context"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// writeBig makes an audit database of n messages of size bytes each, closed
// again, and returns its path.
func writeBig(t *testing.T, n, size int) string {
	t.Helper()
	s, path := openStore(t, Options{})
	body := strings.Repeat("x", size)
	for i := range n {
		if err := s.AppendMessages(context.Background(), "big", []persistence.Message{msg("user", fmt.Sprint(i, body))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// peakHeap runs f and returns the most heap its objects held while it
// ran, sampled every 200 µs, above what they held before.
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	<-stopped
	return peak.Load() - min(peak.Load(), base)
}

// TestVerifyHoldsABoundedWindow: verification reads the chain in windows
// of DefaultWindow chain numbers, each read whole before it is checked;
// 2,000 messages of 4 MiB (what the chat API takes) made one window of 8
// GB. A window is now cut where its values pass MaxWindowBytes: 32
// messages of 1 MiB are verified holding about that, not all 32 MiB.
func TestVerifyHoldsABoundedWindow(t *testing.T) {
	const n, size = 32, 1 << 20
	path := writeBig(t, n, size)
	var rep *auditchain.Report
	var err error
	peak := peakHeap(func() { rep, err = VerifyChain(context.Background(), path) })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified != n {
		t.Fatalf("verified %d records, want %d", rep.Verified, n)
	}
	if limit := uint64(3 * auditchain.MaxWindowBytes); peak > limit {
		t.Fatalf("verification held %d MiB of heap, want at most %d MiB (the window's bound, with copies)", peak>>20, limit>>20)
	}
	t.Logf("peak heap %d MiB for %d MiB of messages", peak>>20, n*size>>20)
}

// TestBoundedWindows: the bounded reads cut a window where its values pass
// the bound, at least one record each, and together read every record once,
// in order, from either end.
func TestBoundedWindows(t *testing.T) {
	const n, size = 10, 100 << 10
	path := writeBig(t, n, size)
	conn, closeConn, err := openReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	ctx := context.Background()
	for _, tc := range []struct {
		max     int64
		perRead int // records a read returns, but for the last
	}{{1, 1}, {size, 1}, {3*size + 3<<10, 3}, {1 << 30, n}} {
		var seqs []int64
		reads := 0
		for lo := int64(0); lo < n; reads++ {
			recs, through, err := auditchain.ReadWindowAtMost(ctx, conn, auditchain.Filter{}, lo, n, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 || len(recs) > tc.perRead || through <= lo || recs[len(recs)-1].Seq != through {
				t.Fatalf("max %d: read after %d: %d records through %d, want 1 to %d ending at it", tc.max, lo, len(recs), through, tc.perRead)
			}
			for _, r := range recs {
				seqs = append(seqs, r.Seq)
			}
			lo = through
		}
		var back []int64
		for hi := int64(n); hi > 0; {
			recs, after, err := auditchain.ReadNewestAtMost(ctx, conn, auditchain.Filter{}, 0, hi, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 || len(recs) > tc.perRead || after >= hi || recs[0].Seq != after+1 || recs[len(recs)-1].Seq != hi {
				t.Fatalf("max %d: read below %d: %d records after %d, want 1 to %d", tc.max, hi, len(recs), after, tc.perRead)
			}
			back = append(recsSeqs(recs), back...)
			hi = after
		}
		if fmt.Sprint(seqs) != fmt.Sprint(back) || len(seqs) != n || seqs[0] != 1 || seqs[n-1] != n {
			t.Fatalf("max %d: forward %v, backward %v, want 1..%d each", tc.max, seqs, back, n)
		}
		if want := (n + tc.perRead - 1) / tc.perRead; reads != want {
			t.Fatalf("max %d: %d reads, want %d", tc.max, reads, want)
		}
	}
}

func recsSeqs(recs []auditchain.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return out
}

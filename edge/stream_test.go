package edge

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// published records what a progressOut published.
type published struct {
	testenv.Recorded[wire.Progress]
}

func (p *published) add(t *testing.T, b []byte) {
	var pr wire.Progress
	if err := json.Unmarshal(b, &pr); err != nil {
		t.Errorf("unreadable progress %s: %v", b, err)
	}
	p.Add(pr)
}

// encodeBare encodes a progress payload without an envelope.
func encodeBare(p wire.Progress) ([]byte, error) { return json.Marshal(p) }

// runOut starts o's goroutine in the test's bubble and stops it at the end.
func runOut(t *testing.T, o *progressOut) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); o.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestCallStreamSendsWhileTheToolRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got published
		out := newProgressOut(func(_ context.Context, b []byte) error { got.add(t, b); return nil }, slog.New(slog.DiscardHandler))
		runOut(t, out)
		s := newCallStream("req-1", out, streamLimits{}, encodeBare)
		for i := range 8 { // a line every 100 ms
			s.write(proc.Stdout, []byte{'0' + byte(i), '\n'})
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		during := len(got.All())
		s.write(proc.Stdout, []byte("end\n")) // after the last tick: only finish sends it
		s.finish()
		synctest.Wait()
		msgs := got.All()
		// 800 ms at one chunk per 250 ms: three while it ran, then the last
		// line at once when it ended.
		if during != 3 || len(msgs) != 4 {
			t.Fatalf("%d reports while running, %d in all: %+v", during, len(msgs), msgs)
		}
		var text strings.Builder
		for i, m := range msgs {
			if m.RequestID != "req-1" || m.Seq != int64(i+1) || m.Stream != wire.StreamStdout {
				t.Fatalf("report %d: %+v", i, m)
			}
			text.WriteString(m.Output)
		}
		if text.String() != "0\n1\n2\n3\n4\n5\n6\n7\nend\n" {
			t.Fatalf("streamed %q", text.String())
		}
	})
}

// TestCallStreamNeverBlocksTheTool publishes into a client that never
// answers: the tool's writes and finish still return at once, and what
// could not be sent is not held.
func TestCallStreamNeverBlocksTheTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts int
		var mu sync.Mutex
		out := newProgressOut(func(ctx context.Context, _ []byte) error {
			mu.Lock()
			attempts++
			mu.Unlock()
			<-ctx.Done() // stuck until its timeout
			return ctx.Err()
		}, slog.New(slog.DiscardHandler))
		runOut(t, out)
		var streams []*callStream
		for i := range 4 {
			streams = append(streams, newCallStream("req-"+string(rune('a'+i)), out, streamLimits{}, encodeBare))
		}
		start := time.Now()
		chunk := make([]byte, 32<<10)
		for range 400 { // 4 calls × 400 × 32 KiB = 50 MB over 10 s
			for _, s := range streams {
				s.write(proc.Stdout, chunk)
			}
			time.Sleep(25 * time.Millisecond)
		}
		for _, s := range streams {
			s.finish()
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Fatalf("the tools took %v instead of 10s: streaming slowed them", d)
		}
		if n := len(out.queue); n > streamQueueLen {
			t.Fatalf("queue holds %d", n)
		}
		mu.Lock()
		defer mu.Unlock()
		// One publish at a time, each stuck for its 2 s timeout.
		if attempts > int(10*time.Second/streamPublishTimeout)+1 {
			t.Fatalf("%d publish attempts", attempts)
		}
		if out.refused.Load() == 0 {
			t.Fatal("nothing was refused although the client was stuck")
		}
	})
}

// TestProgressOutRate checks the agent-wide bound: many busy calls
// together never exceed StreamReportsPerSecond (plus the first burst).
func TestProgressOutRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got published
		out := newProgressOut(func(_ context.Context, b []byte) error { got.add(t, b); return nil }, slog.New(slog.DiscardHandler))
		runOut(t, out)
		var streams []*callStream
		for i := range 16 {
			streams = append(streams, newCallStream("r"+string(rune('a'+i)), out, streamLimits{}, encodeBare))
		}
		for range 100 { // 10 s of every call printing a line every 100 ms
			for _, s := range streams {
				s.write(proc.Stderr, []byte("line\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		n := len(got.All())
		if max := StreamReportsBurst + 10*StreamReportsPerSecond; n > max || n < max-StreamReportsBurst {
			t.Fatalf("%d reports in 10 s from 16 calls, want at most %d (and near it)", n, max)
		}
		for _, s := range streams {
			s.finish()
		}
	})
}

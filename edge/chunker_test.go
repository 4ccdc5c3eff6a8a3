package edge

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// sendDue asks c for a chunk at now and commits it, as if it was sent.
func sendDue(c *chunker, now time.Time, final bool) (wire.Progress, bool) {
	ch, ok := c.next(now, final)
	if ok {
		c.commit(ch, now)
	}
	return ch.p, ok
}

func TestChunkerCoalescesWithinTheInterval(t *testing.T) {
	t0 := time.Unix(100, 0)
	c := newChunker(streamLimits{})
	if _, ok := sendDue(c, t0, false); ok {
		t.Fatal("a chunk with no output")
	}
	c.add(proc.Stdout, []byte("line 1\n"))
	p, ok := sendDue(c, t0, false)
	if !ok || p.Seq != 1 || p.Output != "line 1\n" || p.Stream != wire.StreamStdout || p.Omitted != 0 {
		t.Fatalf("first chunk %+v %v", p, ok)
	}
	c.add(proc.Stdout, []byte("line 2\n"))
	c.add(proc.Stderr, []byte("warn\n"))
	if _, ok := sendDue(c, t0.Add(StreamInterval-time.Millisecond), false); ok {
		t.Fatal("second chunk before the interval passed")
	}
	p, ok = sendDue(c, t0.Add(StreamInterval), false)
	if !ok || p.Seq != 2 || p.Output != "line 2\nwarn\n" || p.Stream != "" {
		t.Fatalf("second chunk %+v %v (want both lines, no stream: mixed)", p, ok)
	}
	c.add(proc.Stderr, []byte("only stderr"))
	p, ok = sendDue(c, t0.Add(StreamInterval+time.Millisecond), true)
	if !ok || p.Seq != 3 || p.Stream != wire.StreamStderr || p.Output != "only stderr" {
		t.Fatalf("final chunk %+v %v (the final one is never held back)", p, ok)
	}
	if _, ok := sendDue(c, t0.Add(time.Hour), true); ok {
		t.Fatal("a chunk after everything was sent")
	}
}

func TestChunkerNeverSplitsARune(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := newChunker(streamLimits{})
	euro := []byte("€") // 3 bytes
	c.add(proc.Stdout, append([]byte("a"), euro[:2]...))
	p, ok := sendDue(c, t0, false)
	if !ok || p.Output != "a" {
		t.Fatalf("chunk %+v %v, want only the whole rune", p, ok)
	}
	c.add(proc.Stdout, euro[2:])
	p, ok = sendDue(c, t0.Add(StreamInterval), false)
	if !ok || p.Output != "€" {
		t.Fatalf("chunk %q, want the completed rune", p.Output)
	}
	// A final chunk sends what is left, made valid.
	c.add(proc.Stdout, []byte{0xe2, 0x82})
	p, ok = sendDue(c, t0.Add(2*StreamInterval), true)
	if !ok || p.Output != "\uFFFD" {
		t.Fatalf("final chunk %q", p.Output)
	}
}

func TestChunkerSanitises(t *testing.T) {
	c := newChunker(streamLimits{})
	c.add(proc.Stdout, []byte("red \x1b[31mtext\x00\r\n"))
	p, _ := sendDue(c, time.Unix(0, 0), false)
	if p.Output != "red [31mtext\r\n" {
		t.Fatalf("output %q", p.Output)
	}
}

// TestChunkerFlood writes 100 MB in 64 KiB writes, one every millisecond,
// and checks every bound: chunks, bytes, memory held, the one final note.
func TestChunkerFlood(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := newChunker(streamLimits{})
	write := make([]byte, 64<<10)
	for i := range write {
		write[i] = 'y'
		if i%2 == 1 {
			write[i] = '\n'
		}
	}
	const total = 100_000_000
	var chunks []wire.Progress
	now := t0
	for written := 0; written < total; written += len(write) {
		c.add(proc.Stdout, write[:min(len(write), total-written)])
		if cap(c.pending) > StreamChunkBytes {
			t.Fatalf("chunker holds %d bytes", cap(c.pending))
		}
		if p, ok := sendDue(c, now, false); ok {
			chunks = append(chunks, p)
		}
		now = now.Add(time.Millisecond)
	}
	p, ok := sendDue(c, now, true)
	if !ok {
		t.Fatal("no final note")
	}
	chunks = append(chunks, p)
	elapsed := now.Sub(t0)
	if max := int(elapsed/StreamInterval) + 2; len(chunks) > max {
		t.Fatalf("%d chunks in %v, at most %d allowed", len(chunks), elapsed, max)
	}
	streamed, named := 0, int64(0)
	for i, p := range chunks {
		if p.Seq != int64(i+1) || len(p.Output) > StreamChunkBytes {
			t.Fatalf("chunk %d: seq %d, %d bytes", i, p.Seq, len(p.Output))
		}
		streamed += len(noteRE.ReplaceAllString(p.Output, ""))
		named += notedBytes(t, p.Output)
	}
	if streamed > StreamBudgetBytes || int64(streamed) != c.accepted {
		t.Fatalf("streamed %d bytes of output (accepted %d), budget %d", streamed, c.accepted, StreamBudgetBytes)
	}
	// Every byte not streamed is named in some note, and counted in the
	// final chunk's Omitted.
	last := chunks[len(chunks)-1]
	if named != total-c.accepted || last.Omitted != total-c.accepted {
		t.Fatalf("notes name %d bytes, final Omitted %d, want %d", named, last.Omitted, total-c.accepted)
	}
}

var noteRE = regexp.MustCompile(`\n\[… \d+ bytes of output not streamed …\]\n`)

// notedBytes sums the byte counts of the "not streamed" notes in s.
func notedBytes(t *testing.T, s string) int64 {
	t.Helper()
	var sum int64
	for _, part := range strings.Split(s, "[… ")[1:] {
		var n int64
		if _, err := fmt.Sscanf(part, "%d bytes of output not streamed", &n); err != nil {
			t.Fatalf("note %q: %v", part, err)
		}
		sum += n
	}
	return sum
}

// TestChunkerBudgetThenOneNote streams a slow tool past its budget: every
// byte up to the budget goes out, then exactly one note names the rest.
func TestChunkerBudgetThenOneNote(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := newChunker(streamLimits{ChunkBytes: 1024, BudgetBytes: 4096, Interval: time.Second})
	line := []byte(strings.Repeat("x", 49) + "\n")
	var out strings.Builder
	var chunks []wire.Progress
	for i := range 1000 { // 50 bytes per 100 ms for 100 s: within the rate, over the budget
		now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		c.add(proc.Stdout, line)
		if p, ok := sendDue(c, now, false); ok {
			chunks = append(chunks, p)
			out.WriteString(p.Output)
		}
	}
	p, ok := sendDue(c, t0.Add(100*time.Second), true)
	if !ok {
		t.Fatal("no final note")
	}
	chunks = append(chunks, p)
	out.WriteString(p.Output)
	all := strings.Repeat(string(line), 1000)
	want := all[:4096] + "\n[… 45904 bytes of output not streamed …]\n"
	if out.String() != want {
		t.Fatalf("streamed %d bytes:\n%q\nwant %d bytes ending %q", out.Len(), out.String()[max(0, out.Len()-120):], len(want), want[len(want)-60:])
	}
	notes := 0
	for _, p := range chunks {
		notes += strings.Count(p.Output, "not streamed")
	}
	if notes != 1 || p.Omitted != 45904 {
		t.Fatalf("%d notes, final omitted %d", notes, p.Omitted)
	}
}

// TestChunkerRefusedChunkStays checks that a chunk that was not sent (rate
// or queue) keeps its output for the next try.
func TestChunkerRefusedChunkStays(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := newChunker(streamLimits{})
	c.add(proc.Stdout, []byte("kept"))
	if _, ok := c.next(t0, false); !ok {
		t.Fatal("nothing due")
	}
	// Not committed: the same output is proposed again.
	p, ok := sendDue(c, t0, false)
	if !ok || p.Seq != 1 || p.Output != "kept" {
		t.Fatalf("retried chunk %+v", p)
	}
}

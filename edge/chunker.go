package edge

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// Bounds of the output one tool call streams; see docs/WIRE.md.
const (
	// StreamInterval is the least time between two progress reports of
	// one call: output is coalesced for at least this long.
	StreamInterval = 250 * time.Millisecond
	// StreamChunkBytes bounds the output of one progress report.
	StreamChunkBytes = wire.MaxProgressOutput
	// StreamBudgetBytes bounds the output streamed for one call; the rest
	// is counted and named in one final note.
	StreamBudgetBytes = 64 << 10
	// markerReserve is the room kept in a chunk for a "bytes not
	// streamed" note (at most ~50 bytes).
	markerReserve = 64
)

// streamLimits are the bounds a chunker keeps; the zero value means the
// Stream* constants.
type streamLimits struct {
	Interval    time.Duration
	ChunkBytes  int
	BudgetBytes int64
}

func (l streamLimits) withDefaults() streamLimits {
	defaults.Positive(&l.Interval, StreamInterval)
	if l.ChunkBytes <= markerReserve {
		l.ChunkBytes = StreamChunkBytes
	}
	defaults.Positive(&l.BudgetBytes, StreamBudgetBytes)
	return l
}

// chunker turns the output of one running tool into progress chunks
// within streamLimits: at most one chunk per Interval, at most ChunkBytes
// each, at most BudgetBytes of output in all. It holds at most ChunkBytes
// of output, whatever the tool writes: what does not fit is counted as
// omitted and named in the text of a later chunk. It does no I/O and reads
// no clock; the caller passes the time and is its only user at a time.
type chunker struct {
	lim streamLimits

	pending  []byte      // output taken but not sent; at most ChunkBytes-markerReserve
	stream   proc.Stream // of every byte in pending; "" when mixed
	accepted int64       // bytes ever taken into pending
	omitted  int64       // bytes not taken (no room, over budget, cut)
	told     int64       // omitted bytes already named in a chunk
	seq      int64       // Seq of the last chunk sent
	last     time.Time   // when the last chunk was sent; zero: none yet
}

func newChunker(lim streamLimits) *chunker {
	lim = lim.withDefaults()
	return &chunker{lim: lim, pending: make([]byte, 0, lim.ChunkBytes-markerReserve)}
}

// add takes p, written by the tool to stream s, as far as there is room.
// It never keeps a reference to p.
func (c *chunker) add(s proc.Stream, p []byte) {
	room := min(int64(cap(c.pending)-len(c.pending)), c.lim.BudgetBytes-c.accepted)
	n := int(max(0, min(room, int64(len(p)))))
	if n > 0 {
		switch {
		case len(c.pending) == 0:
			c.stream = s
		case c.stream != s:
			c.stream = ""
		}
		c.pending = append(c.pending, p[:n]...)
		c.accepted += int64(n)
	}
	c.omitted += int64(len(p) - n)
}

// chunk is a progress report a chunker proposes; it takes effect only
// when committed.
type chunk struct {
	p    wire.Progress
	take int   // bytes of pending it sends
	cut  int64 // bytes of pending dropped to fit (sanitising grew them)
	told int64 // omitted bytes named once it is sent
}

// next proposes the chunk to send at now, if one is due. A chunk is due
// Interval after the previous one, or at once when final (the tool ended):
// the final chunk carries what is pending and names every omitted byte not
// named yet. A rune cut in half by a write stays pending until it is whole.
func (c *chunker) next(now time.Time, final bool) (chunk, bool) {
	if !final && !c.last.IsZero() && now.Sub(c.last) < c.lim.Interval {
		return chunk{}, false
	}
	take := len(c.pending)
	if !final {
		take = wholeRunes(c.pending)
	}
	// A gap is named after the output that came before it: only in a chunk
	// that empties pending. Once the budget is spent, a gap is named only
	// by the final chunk, so a flood ends in exactly one note.
	told := c.told
	marker := ""
	if c.omitted > c.told && take == len(c.pending) && (final || c.accepted < c.lim.BudgetBytes) {
		marker = fmt.Sprintf("\n[… %d bytes of output not streamed …]\n", c.omitted-c.told)
		told = c.omitted
	}
	if take == 0 && marker == "" {
		return chunk{}, false
	}
	text := skills.Sanitize(string(c.pending[:take]))
	var dropped int64
	if room := c.lim.ChunkBytes - len(marker); len(text) > room {
		// Sanitising replaced invalid bytes by U+FFFD and grew the text.
		short := cut(text, room)
		dropped = int64(len(text) - len(short))
		text = short
	}
	return chunk{p: wire.Progress{Seq: c.seq + 1, Stream: string(c.stream), Output: text + marker, Omitted: c.omitted + dropped},
		take: take, cut: dropped, told: told}, true
}

// commit records that ch, proposed by the last next, was sent at now.
func (c *chunker) commit(ch chunk, now time.Time) {
	c.pending = c.pending[:copy(c.pending, c.pending[ch.take:])]
	if len(c.pending) == 0 {
		c.stream = ""
	}
	c.omitted += ch.cut
	c.told = ch.told
	c.seq = ch.p.Seq
	c.last = now
}

// wholeRunes returns the length of the longest prefix of b that does not
// end inside a UTF-8 sequence that may still be completed.
func wholeRunes(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

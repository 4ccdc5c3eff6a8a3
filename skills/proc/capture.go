package proc

import (
	"io"
	"sync"
)

// readChunk is the size of one read from an output pipe.
const readChunk = 32 << 10

// chunks are the read buffers of drain, reused: two fresh 32 KB buffers
// per run were most of the garbage an agent made per tool call, and the
// collections they caused ran beside every call.
var chunks = sync.Pool{New: func() any { return new([readChunk]byte) }}

// capture keeps the first max bytes of a stream and counts the rest.
// It is owned by the one goroutine running drain until drain returns.
type capture struct {
	max   int
	buf   []byte
	total int64
	// stream and tap are Spec.OnOutput and the stream it names; tap is
	// nil when nobody watches.
	stream Stream
	tap    func(Stream, []byte)
}

// drain reads r until EOF or an error (the pipe being closed under it) and
// discards everything beyond max, so memory stays bounded whatever the
// child writes.
func (c *capture) drain(r io.Reader) {
	buf := chunks.Get().(*[readChunk]byte)
	defer chunks.Put(buf)
	chunk := buf[:]
	for {
		n, err := r.Read(chunk)
		c.total += int64(n)
		if n > 0 && c.tap != nil {
			c.tap(c.stream, chunk[:n])
		}
		if room := c.max - len(c.buf); room > 0 {
			c.buf = append(c.buf, chunk[:min(n, room)]...)
		}
		if err != nil {
			return
		}
	}
}

// truncated reports whether bytes were discarded.
func (c *capture) truncated() bool { return c.total > int64(len(c.buf)) }

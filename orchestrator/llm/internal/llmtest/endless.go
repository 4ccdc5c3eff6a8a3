package llmtest

import "sync/atomic"

// Endless is an event stream that never ends: head once, then chunk(i) for
// i = 0, 1, 2, ... for as long as it is read. It stands for a model that
// writes without end. It is an io.Reader.
type Endless struct {
	chunk func(i int) string
	buf   []byte
	i     int
	read  atomic.Int64
}

// NewEndless starts an Endless stream.
func NewEndless(head string, chunk func(i int) string) *Endless {
	return &Endless{chunk: chunk, buf: []byte(head)}
}

// Read implements io.Reader; it never returns an error.
func (e *Endless) Read(p []byte) (int, error) {
	for len(e.buf) == 0 {
		e.buf = []byte(e.chunk(e.i))
		e.i++
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	e.read.Add(int64(n))
	return n, nil
}

// BytesRead is how many bytes of the stream were read.
func (e *Endless) BytesRead() int64 { return e.read.Load() }

// Package sse reads a server-sent event stream (the text/event-stream
// format of the HTML standard) as the LLM APIs use it: events of "event:"
// and "data:" lines ended by a blank line.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxEvent bounds one event's data. A streamed chunk is a few hundred bytes;
// a longer line means the peer is not speaking SSE.
const MaxEvent = 1 << 20

// ErrTooLong is returned for an event or line over MaxEvent bytes.
var ErrTooLong = errors.New("sse: event too long")

// Event is one dispatched event.
type Event struct {
	// Type is the "event:" field, empty when absent.
	Type string
	// Data is the "data:" lines joined by "\n".
	Data []byte
}

// Reader reads events. It is not safe for concurrent use.
type Reader struct {
	s *bufio.Scanner
	// cut is set when the last line read had no line end: the stream
	// broke in the middle of it.
	cut bool
	// stray is the start of the first line that is no field of the
	// format (see Stray).
	stray []byte
}

// maxStray bounds what Stray keeps of a line.
const maxStray = 256

// Stray returns the start (at most 256 bytes) of the first line read that
// is not a field of the format (event, data, id, retry) nor a comment, nil
// when there was none. The format ignores such lines; a body made of them
// only is not an event stream at all (an HTML page, a plain-text error),
// and the line says what it was instead.
func (r *Reader) Stray() []byte { return r.stray }

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	rd := &Reader{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 4096), MaxEvent)
	s.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := scanLines(data, atEOF)
		if tok != nil && atEOF && adv == len(data) && !bytes.HasSuffix(data, []byte("\n")) && !bytes.HasSuffix(data, []byte("\r")) {
			rd.cut = true
		}
		return adv, tok, err
	})
	rd.s = s
	return rd
}

// Next returns the next event with data, or io.EOF at the end of the
// stream. At the end, a last event whose lines are complete but lack the
// closing blank line is still dispatched; a line cut by the end of the
// stream is dropped with its event, so a broken connection never yields
// half a chunk. Comment lines and id/retry fields are ignored.
func (r *Reader) Next() (Event, error) {
	var ev Event
	var data bytes.Buffer
	have := false
	for r.s.Scan() {
		line := r.s.Bytes()
		if r.cut {
			// A page or error text need not end its last line; the
			// start of a field's name cut by a broken stream is no stray.
			if !isFieldStart(line) {
				r.noteStray(line)
			}
			break
		}
		if len(line) == 0 {
			if have {
				ev.Data = data.Bytes()
				return ev, nil
			}
			ev.Type = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Type = string(value)
		case "data":
			if have {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > MaxEvent {
				return Event{}, ErrTooLong
			}
			data.Write(value)
			have = true
		default:
			r.noteStray(line)
		}
	}
	if err := r.s.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, ErrTooLong
		}
		return Event{}, fmt.Errorf("sse: %w", err)
	}
	if have && !r.cut {
		ev.Data = data.Bytes()
		return ev, nil
	}
	return Event{}, io.EOF
}

// noteStray keeps the start of line as Stray when it is the first line
// that is no field of the format nor a comment.
func (r *Reader) noteStray(line []byte) {
	if r.stray != nil || len(line) == 0 || line[0] == ':' {
		return
	}
	switch field, _, _ := bytes.Cut(line, []byte(":")); string(field) {
	case "event", "data", "id", "retry":
		return
	}
	r.stray = bytes.Clone(line[:min(len(line), maxStray)])
}

// isFieldStart reports whether line is the start of a field's name, all
// that a stream cut early leaves of its line.
func isFieldStart(line []byte) bool {
	for _, f := range []string{"event", "data", "id", "retry"} {
		if strings.HasPrefix(f, string(line)) {
			return true
		}
	}
	return false
}

// scanLines splits on "\n", "\r\n" or a lone "\r", as the format allows.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\r' {
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if !atEOF {
				return 0, nil, nil // need one more byte to tell \r from \r\n
			}
		}
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

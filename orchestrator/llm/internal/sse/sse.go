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
}

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
		if r.cut {
			break
		}
		line := r.s.Bytes()
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

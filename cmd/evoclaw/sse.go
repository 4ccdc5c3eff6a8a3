package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxSSEEvent bounds the bytes of one server-sent event (its data lines
// together): a node's answer is far smaller, a broken stream is not.
const maxSSEEvent = 8 << 20

// errSSETooLong is an event beyond maxSSEEvent.
var errSSETooLong = errors.New("server-sent event too long")

// sseEvent is one event of a text/event-stream: its name ("message" when the
// stream names none) and its data lines joined by "\n".
type sseEvent struct {
	Name string
	Data string
}

// sseReader reads the events of a text/event-stream body, skipping comments
// (keep-alives) and fields other than event and data. It is not safe for
// concurrent use.
type sseReader struct {
	r *bufio.Reader
	// max bounds one event in bytes; zero means maxSSEEvent.
	max int
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

// next returns the next event. At the end of the stream it returns io.EOF
// (an event cut off by the end is dropped, as the format says), or
// io.ErrUnexpectedEOF when the stream ended inside one.
func (s *sseReader) next() (sseEvent, error) {
	limit := s.max
	if limit <= 0 {
		limit = maxSSEEvent
	}
	var (
		name    string
		data    []byte
		hasData bool
		size    int
		partial bool // a field was read since the last dispatch
	)
	for {
		line, err := s.line(limit - size)
		if err != nil {
			if err == io.EOF && partial {
				return sseEvent{}, io.ErrUnexpectedEOF
			}
			return sseEvent{}, err
		}
		size += len(line)
		if len(line) == 0 { // a blank line dispatches
			if hasData {
				if name == "" {
					name = "message"
				}
				return sseEvent{Name: name, Data: string(data)}, nil
			}
			name, partial, size = "", false, 0
			continue
		}
		if line[0] == ':' {
			continue // a comment: keep-alive
		}
		partial = true
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
}

// line reads one line without its ending (LF or CRLF), at most max bytes.
func (s *sseReader) line(max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(buf)+len(chunk) > max+2 {
			return nil, errSSETooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			buf = bytes.TrimSuffix(buf[:len(buf)-1], []byte("\r"))
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(buf) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readEvents(r io.Reader, max int) ([]sseEvent, error) {
	s := newSSEReader(r)
	s.max = max
	var evs []sseEvent
	for {
		e, err := s.next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, e)
	}
}

func TestSSEReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []sseEvent
		err      error
	}{
		{"events", "event: a\ndata: {\"x\":1}\n\nevent: b\ndata: 2\n\n", []sseEvent{{"a", `{"x":1}`}, {"b", "2"}}, io.EOF},
		{"comments and crlf", ": keep-alive\r\n\r\nevent: a\r\ndata: 1\r\n\r\n: bye\n", []sseEvent{{"a", "1"}}, io.EOF},
		{"multi-line data", "data: one\ndata: two\ndata\n\n", []sseEvent{{"message", "one\ntwo\n"}}, io.EOF},
		{"no space after colon", "event:a\ndata:x\n\n", []sseEvent{{"a", "x"}}, io.EOF},
		{"event without data is dropped", "event: a\n\nevent: b\ndata: y\n\n", []sseEvent{{"b", "y"}}, io.EOF},
		{"other fields ignored", "id: 3\nretry: 10\nevent: a\ndata: z\n\n", []sseEvent{{"a", "z"}}, io.EOF},
		{"cut in an event", "event: a\ndata: 1\n\nevent: b\ndata: 2\n", []sseEvent{{"a", "1"}}, io.ErrUnexpectedEOF},
		{"cut in a line", "event: a\ndata: 1", nil, io.ErrUnexpectedEOF},
		{"too long", "data: " + strings.Repeat("x", 100) + "\n\n", nil, errSSETooLong},
		{"too long across lines", strings.Repeat("data: xxxxxxxxxx\n", 20) + "\n", nil, errSSETooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := readEvents(iotest.OneByteReader(strings.NewReader(tc.in)), 64)
			if !errors.Is(err, tc.err) || len(evs) != len(tc.want) {
				t.Fatalf("events %q, err %v; want %q, %v", evs, err, tc.want, tc.err)
			}
			for i := range evs {
				if evs[i] != tc.want[i] {
					t.Fatalf("event %d: %q, want %q", i, evs[i], tc.want[i])
				}
			}
		})
	}
}

// FuzzSSEReader: any stream ends in an error, never a panic or a loop,
// and no event is larger than the bound.
func FuzzSSEReader(f *testing.F) {
	f.Add("event: answer\ndata: {\"text\":\"hi\"}\n\n")
	f.Add(": ka\r\n\r\ndata:x\ndata\n\n")
	f.Add("event: a\ndata: 1")
	f.Add(strings.Repeat("data: x\n", 40))
	f.Fuzz(func(t *testing.T, in string) {
		s := newSSEReader(strings.NewReader(in))
		s.max = 128
		for i := 0; ; i++ {
			e, err := s.next()
			if err != nil {
				return
			}
			if len(e.Data) > 128 || i > len(in) {
				t.Fatalf("event %d of %d bytes from %d bytes of input", i, len(e.Data), len(in))
			}
		}
	})
}

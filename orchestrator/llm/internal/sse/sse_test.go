package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestEvents(t *testing.T) {
	in := ": keep-alive\r\n" +
		"event: message_start\r\ndata: {\"a\":1}\r\n\r\n" +
		"data: one\ndata: two\n\n" +
		"id: 7\nretry: 10\n\n" + // no data: not dispatched
		"data:no-space\r\r" +
		"event: ping\ndata: last\n"
	r := NewReader(strings.NewReader(in))
	want := []Event{
		{Type: "message_start", Data: []byte(`{"a":1}`)},
		{Data: []byte("one\ntwo")},
		{Data: []byte("no-space")},
		{Type: "ping", Data: []byte("last")},
	}
	for i, w := range want {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Type != w.Type || string(ev.Data) != string(w.Data) {
			t.Fatalf("event %d = %q %q, want %q %q", i, ev.Type, ev.Data, w.Type, w.Data)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}

func TestCutLineDropped(t *testing.T) {
	r := NewReader(strings.NewReader("data: {\"a\":1}\n\ndata: {\"choi"))
	if ev, err := r.Next(); err != nil || string(ev.Data) != `{"a":1}` {
		t.Fatalf("first: %q %v", ev.Data, err)
	}
	if ev, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("a line cut by the end of the stream was dispatched: %q %v", ev.Data, err)
	}
}

func TestTooLong(t *testing.T) {
	r := NewReader(strings.NewReader("data: " + strings.Repeat("x", MaxEvent+10) + "\n\n"))
	if _, err := r.Next(); !errors.Is(err, ErrTooLong) {
		t.Fatalf("err = %v", err)
	}
	many := strings.Repeat("data: "+strings.Repeat("y", 1000)+"\n", MaxEvent/1000+2)
	r = NewReader(strings.NewReader(many + "\n"))
	if _, err := r.Next(); !errors.Is(err, ErrTooLong) {
		t.Fatalf("multi-line err = %v", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("event: a\ndata: b\n\n"))
	f.Add([]byte("data: [DONE]\r\n\r\n"))
	f.Add([]byte(":c\rdata:x\r"))
	f.Add([]byte("<html>\n<body>Bad Gateway</body>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(strings.NewReader(string(b)))
		total := 0
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				if st := r.Stray(); len(st) > maxStray || !bytes.Contains(b, st) {
					t.Fatalf("stray line %q: longer than %d or not from the input", st, maxStray)
				}
				return
			}
			total += len(ev.Data)
			if total > len(b) || i > len(b) {
				t.Fatalf("read more than the input: %d events, %d bytes of %d", i, total, len(b))
			}
		}
	})
}

// TestStray: the first line that is no field of the format is kept (its
// start) for a caller to quote when a body held no event; fields, comments
// and the start of a field's name cut by the end of the stream are not.
func TestStray(t *testing.T) {
	for in, want := range map[string]string{
		"<html>\n<body>Bad Gateway</body>\n":    "<html>",
		"Bad Gateway":                           "Bad Gateway",
		": ping\nid: 1\nretry: 5\nevent: x\n\n": "",
		"data: {\"a\":1}\n\nnot sse\n":          "not sse",
		"da":                                    "",
		"data: {\"a\"":                          "",
		strings.Repeat("x", 1000) + "\n":        strings.Repeat("x", maxStray),
	} {
		r := NewReader(strings.NewReader(in))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		if got := string(r.Stray()); got != want {
			t.Errorf("Stray of %.40q = %.40q, want %.40q", in, got, want)
		}
	}
}

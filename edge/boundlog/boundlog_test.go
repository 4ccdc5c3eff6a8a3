package boundlog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type packet struct {
	Topic   string
	Payload []byte
}

func TestCut(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 4, "abcd…(12 bytes)"},
		{"aé", 2, "a…(3 bytes)"}, // é is two bytes: never cut inside a rune
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := Cut(tt.in, tt.n); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestHandlerBoundsEveryValue(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(New(slog.NewTextHandler(&buf, nil), nil, nil))
	big := strings.Repeat("x", 1<<20)
	log.With("client", big).WithGroup("grp").Warn(big,
		"topic", big,
		"err", errors.New(big),
		"payload", []byte(big),
		"pk", packet{Topic: "t", Payload: []byte(big)},
		"pkp", &packet{Payload: []byte(big)},
		"n", 42,
		slog.Group("g", "inner", big),
		"ok", true)
	out := buf.String()
	if len(out) > 2000 {
		t.Fatalf("line of %d bytes from 1 MiB values", len(out))
	}
	for _, want := range []string{"(1048576 bytes)", "grp.payload=\"<1048576 bytes>\"", "<boundlog.packet>", "<*boundlog.packet>", "grp.n=42", "grp.ok=true"} {
		if !strings.Contains(out, want) {
			t.Errorf("line lacks %q:\n%.1000s", want, out)
		}
	}
}

func TestHandlerRateLimitsAcrossLoggers(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	lim := NewLimiter()
	a := slog.New(New(slog.NewTextHandler(&buf, nil), lim, clock))
	b := slog.New(New(slog.NewTextHandler(&buf, nil), lim, clock)).With("component", "b")
	for i := 0; i < 100; i++ {
		a.Warn("from a")
		b.Warn("from b")
	}
	if n := strings.Count(buf.String(), "\n"); n != DefaultBurst {
		t.Fatalf("%d lines in one window, want %d", n, DefaultBurst)
	}
	now = now.Add(DefaultWindow)
	a.Warn("after")
	last := buf.String()[strings.LastIndex(strings.TrimSuffix(buf.String(), "\n"), "\n")+1:]
	if !strings.Contains(last, "suppressed=180") {
		t.Fatalf("first line of the next window = %q, want suppressed=180", last)
	}
}

package persistence

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExcerpt(t *testing.T) {
	euro := "€" // 3 bytes
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"short", "hello", "hello"},
		{"exactly max", strings.Repeat("a", MaxExcerptBytes), strings.Repeat("a", MaxExcerptBytes)},
		{"one over", strings.Repeat("a", MaxExcerptBytes+1), strings.Repeat("a", MaxExcerptBytes)},
		// 4095 ASCII bytes then a 3-byte rune: the rune does not fit and must
		// be dropped whole, not split.
		{"rune across the limit", strings.Repeat("a", MaxExcerptBytes-1) + euro + "tail", strings.Repeat("a", MaxExcerptBytes-1)},
		{"rune ending at the limit", strings.Repeat("a", MaxExcerptBytes-3) + euro + "tail", strings.Repeat("a", MaxExcerptBytes-3) + euro},
		{"invalid bytes replaced", "ok\xffok", "ok\uFFFDok"},
		{"truncated rune at the end of input", "ab\xe2\x82", "ab\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Excerpt(tt.in)
			if got != tt.want {
				t.Fatalf("Excerpt: got %d bytes %q..., want %d bytes %q...", len(got), head(got), len(tt.want), head(tt.want))
			}
		})
	}
}

func head(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}

func FuzzExcerpt(f *testing.F) {
	f.Add("hello")
	f.Add(strings.Repeat("€", MaxExcerptBytes))
	f.Add(strings.Repeat("\xff", MaxExcerptBytes+7))
	f.Fuzz(func(t *testing.T, s string) {
		got := Excerpt(s)
		if len(got) > MaxExcerptBytes {
			t.Fatalf("excerpt is %d bytes, max %d", len(got), MaxExcerptBytes)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("excerpt is not valid UTF-8: %q", got)
		}
		if utf8.ValidString(s) && !strings.HasPrefix(s, got) {
			t.Fatalf("excerpt of valid input is not a prefix")
		}
		if utf8.ValidString(s) && len(s) <= MaxExcerptBytes && got != s {
			t.Fatalf("short valid input changed")
		}
	})
}

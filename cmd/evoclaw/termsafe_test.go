package main

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", "load 0.1\nmem ok", 0, "load 0.1\nmem ok"},
		{"csi colour", "\x1b[31mred\x1b[0m", 0, "red"},
		{"csi clear screen and move", "a\x1b[2J\x1b[1;1Hb", 0, "ab"},
		{"osc title with bel", "\x1b]0;owned\x07x", 0, "x"},
		{"osc clipboard with st", "\x1b]52;c;cGFzdGU=\x1b\\x", 0, "x"},
		{"dcs", "\x1bPq#0;2;0;0;0\x1b\\x", 0, "x"},
		{"two-byte escape", "a\x1bcb", 0, "ab"},
		{"c1 csi", "a\u009b2Jb", 0, "ab"},
		{"c1 osc", "a\u009d0;t\u009cb", 0, "ab"},
		{"carriage return", "safe\r\x1b[Kfake", 0, "safefake"},
		{"backspace and bell", "ab\b\b\acd", 0, "abcd"},
		{"tab", "a\tb", 0, "a b"},
		{"bidi override", "abc\u202edef", 0, "abcdef"},
		{"zero-width space and byte-order mark", "cu\u200brl\ufeff", 0, "curl"},
		{"tag characters", "ok\U000E0069\U000E0067\U000E007F", 0, "ok"},
		{"joiners kept", "\U0001F469\u200d\U0001F4BB \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", 0, "\U0001F469\u200d\U0001F4BB \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"},
		{"invalid utf-8", "a\xffb", 0, "a\ufffdb"},
		{"unterminated osc", "a\x1b]0;never ends", 0, "a"},
		{"cut per line", "abcdef\nabc", 3, "abc…\nabc"},
		{"unicode kept", "température 21°C ✓", 0, "température 21°C ✓"},
	} {
		if got := termSafe(tc.in, tc.max); got != tc.want {
			t.Errorf("%s: termSafe(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
	if got := termLine(" a\nb\r\n  c ", 0); got != "a b c" {
		t.Errorf("termLine: %q", got)
	}
}

// FuzzTermSafe: whatever comes in, what goes out is valid UTF-8 without a
// control character other than newline, without invisible format
// characters but the joiners, and with no line longer than the bound
// (plus its "…").
func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"\x1b[31mx", "\x1b]0;t\x07", "\u009b1;1H", "a\r\nb", "\xff\xfe", "\u202e", "\U000E0041\u200b", strings.Repeat("x", 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const max = 20
		out := termSafe(s, max)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
		}
		for _, r := range out {
			if r != '\n' && unicode.IsControl(r) || invisibleFormat(r) {
				t.Fatalf("%U got through from %q: %q", r, s, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > max+1 {
				t.Fatalf("line of %d runes from %q", n, s)
			}
		}
	})
}

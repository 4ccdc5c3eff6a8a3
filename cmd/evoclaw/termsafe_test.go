package main

import (
	"encoding/json"
	"reflect"
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

// hiddenJSON reports a character jsonSafe must not leave raw.
func hiddenJSON(r rune) bool {
	return r == 0x7f || (r >= 0x80 && r <= 0x9f) || (unicode.Is(unicode.Cf, r) && r != 0x200c && r != 0x200d)
}

func TestJSONSafe(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
	}{
		{"c1 osc clipboard write", "caps \u009d52;c;cGFzdGU=\u009c end"},
		{"c1 csi", "a\u009b2Jb"},
		{"del", "a\x7fb"},
		{"bidi override", "rm\u202efdp.tad"},
		{"zero-width and tag characters", "cu\u200brl \U000E0041\U000E007F"},
		{"joiners and plain text kept", "\U0001F469\u200d\U0001F4BB température ✓"},
		{"nested", map[string]any{"params": []any{"\u009d0;t\u009c", 1.5}, "note": "ok"}},
	} {
		b, err := json.Marshal(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		out := jsonSafe(b)
		if strings.ContainsFunc(string(out), hiddenJSON) || !utf8.Valid(out) {
			t.Errorf("%s: %q left a hidden character raw: %q", tc.name, b, out)
		}
		var before, after any
		if err := json.Unmarshal(b, &before); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("%s: %q is not JSON: %v", tc.name, out, err)
		}
		if !reflect.DeepEqual(before, after) {
			t.Errorf("%s: %q reads %q, want %q", tc.name, out, after, before)
		}
	}
	// A byte that is not UTF-8 (as json.Indent passes it) reads as U+FFFD.
	if got, want := string(jsonSafe([]byte("\"a\x9bb\""))), `"a\ufffdb"`; got != want {
		t.Errorf("invalid UTF-8: %s, want %s", got, want)
	}
	plain := []byte(`{"a":"b"}`)
	if got := jsonSafe(plain); &got[0] != &plain[0] {
		t.Error("plain JSON copied")
	}
}

// FuzzJSONSafe: the JSON of any string, spelled by jsonSafe, is valid
// UTF-8 without a raw C1 control, DEL or invisible format character but
// the joiners, and reads as the same string.
func FuzzJSONSafe(f *testing.F) {
	for _, s := range []string{"\u009d0;t\u009c", "\u202e", "\U000E0041\u200b", "\x7f", "\xff\x9b", "\u2028", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out := jsonSafe(b)
		if !utf8.Valid(out) || strings.ContainsFunc(string(out), hiddenJSON) {
			t.Fatalf("hidden character raw out of %q: %q", s, out)
		}
		var want, got string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &got); err != nil || got != want {
			t.Fatalf("%q reads %q (%v), want %q", out, got, err, want)
		}
		// Raw bytes (json.Indent passes any): nothing hidden gets out.
		if raw := jsonSafe([]byte(s)); !utf8.Valid(raw) || strings.ContainsFunc(string(raw), hiddenJSON) {
			t.Fatalf("hidden character raw out of bytes %q: %q", s, raw)
		}
	})
}

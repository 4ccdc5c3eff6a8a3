package main

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Bounds of text from a node shown on a terminal, in runes per line.
const (
	// maxAnswerLine bounds one line of an answer.
	maxAnswerLine = 4000
	// maxProgressLine bounds one line of tool progress.
	maxProgressLine = 240
)

// termSafe makes text that came from a node (and so, maybe, from an agent's
// tool) harmless on a terminal: escape sequences (CSI, OSC, DCS, ...) and
// control characters and invisible format characters are removed, tabs become spaces, invalid UTF-8 becomes
// U+FFFD, and each line is cut at max runes (0: no bound) with "…".
// Newlines are kept; a carriage return ends nothing and is dropped, so that
// nothing can overwrite what is already on the screen.
func termSafe(s string, max int) string {
	var b strings.Builder
	b.Grow(len(s))
	col := 0 // runes on the current line
	cut := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			r = unicode.ReplacementChar
		}
		if r == 0x1b || r == 0x9b || r == 0x9d || r == 0x90 || r == 0x9f || r == 0x9e { // ESC, C1 CSI, OSC, DCS, APC, PM
			i = skipEscape(s, i)
			continue
		}
		i += size
		switch {
		case r == '\n':
			b.WriteByte('\n')
			col, cut = 0, false
			continue
		case r == '\t':
			r = ' '
		case unicode.IsControl(r) || invisibleFormat(r):
			continue
		}
		if cut {
			continue
		}
		if max > 0 && col >= max {
			b.WriteString("…")
			cut = true
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}

// termLine is termSafe for text shown on one line: line breaks become
// spaces, and surrounding space is trimmed.
func termLine(s string, max int) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)), " ")
	return termSafe(s, max)
}

// skipEscape returns the index just after the escape sequence starting at
// s[i] (ESC or a C1 introducer). Unterminated sequences run to the end.
func skipEscape(s string, i int) int {
	var kind byte // '[' CSI, ']' OSC, 'P' DCS, '_' APC, '^' PM, 'X' SOS
	if s[i] == 0x1b {
		i++
		if i >= len(s) {
			return i
		}
		kind = s[i]
		i++
		switch kind {
		case '[', ']', 'P', '_', '^', 'X':
		default:
			return i // a two-byte escape (ESC 7, ESC c, ...)
		}
	} else {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		kind = map[rune]byte{0x9b: '[', 0x9d: ']', 0x90: 'P', 0x9f: '_', 0x9e: '^'}[r]
	}
	if kind == '[' {
		// parameters and intermediates, then one final byte 0x40-0x7e
		for i < len(s) {
			c := s[i]
			i++
			if c >= 0x40 && c <= 0x7e || c < 0x20 || c > 0x7e {
				return i // the final byte, or a broken sequence
			}
		}
		return i
	}
	// string sequences end at BEL or ST (ESC \ or 0x9c)
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

// invisibleFormat reports the invisible format characters (Unicode's Cf)
// that shown text drops: bidi controls, with which shown text can read
// other than what it says, and zero-width and tag characters, which hide
// text in what looks like plain words. The two joiners stay: scripts and
// emoji need them, and they hide nothing.
func invisibleFormat(r rune) bool {
	return r != 0x200c && r != 0x200d && unicode.Is(unicode.Cf, r)
}

// jsonSafe returns the JSON text b spelled so that a terminal shows it as
// it is: DEL, the C1 controls (U+0080 to U+009F: a terminal may take
// U+009D as the start of an OSC, a clipboard write say) and the invisible
// format characters but the joiners (bidi overrides, zero-width and tag
// characters) are written as \u escapes, as encoding/json already writes
// the C0 controls; a byte that is not UTF-8 is written \ufffd, the
// character a JSON reader takes it for. Those characters can only stand
// inside strings of valid JSON, so the value is unchanged: only its
// spelling is. b is returned as it is when it holds none of them.
func jsonSafe(b []byte) []byte {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r == utf8.RuneError || jsonEscaped(r) }) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case r > 0xffff && jsonEscaped(r):
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		case jsonEscaped(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

// jsonEscaped reports the characters jsonSafe escapes.
func jsonEscaped(r rune) bool {
	return r == 0x7f || (r >= 0x80 && r <= 0x9f) || invisibleFormat(r)
}

package persistence

import (
	"strings"
	"unicode/utf8"
)

// MaxExcerptBytes is the largest ToolCall.ResultExcerpt, in bytes.
const MaxExcerptBytes = 4096

// Excerpt returns the start of s as valid UTF-8 of at most MaxExcerptBytes,
// cut on a rune boundary. Invalid byte sequences become U+FFFD.
func Excerpt(s string) string {
	// Cut first so that a multi-megabyte result is not copied whole by
	// ToValidUTF8; one extra rune of slack keeps a rune split by the cut
	// from turning into U+FFFD.
	s = cutOnRuneStart(s, MaxExcerptBytes+utf8.UTFMax)
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	return cutOnRuneStart(s, MaxExcerptBytes)
}

// cutOnRuneStart returns the longest prefix of s of at most n bytes that does
// not end inside a UTF-8 sequence.
func cutOnRuneStart(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	// A UTF-8 sequence is at most UTFMax bytes, so at most UTFMax-1
	// continuation bytes need to be skipped; beyond that the bytes are
	// invalid anyway and any cut is as good as another.
	for j := 0; j < utf8.UTFMax-1 && i > 0 && !utf8.RuneStart(s[i]); j++ {
		i--
	}
	return s[:i]
}

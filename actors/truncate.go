package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// MaxToolResultBytes caps what one tool result may add to the conversation.
const MaxToolResultBytes = 64 << 10

// truncateResult cuts a tool result to at most max bytes, in a way the model
// can see and that keeps JSON readable as JSON:
//   - a JSON array keeps its leading elements and ends with a sentinel
//     object {"_truncated": true, "omitted_elements": N, "total_bytes": B};
//   - a JSON object becomes {"_truncated_json": "<its start as text>",
//     "total_bytes": B};
//   - anything else is cut at a UTF-8 boundary and ends with a line saying
//     how much was shown.
//
// A result within max is returned unchanged.
func truncateResult(s string, max int) string {
	if len(s) <= max {
		return s
	}
	trimmed := bytes.TrimSpace([]byte(s))
	if len(trimmed) > 0 && json.Valid(trimmed) {
		switch trimmed[0] {
		case '[':
			if out, ok := truncateArray(trimmed, len(s), max); ok {
				return out
			}
		case '{':
			if out, ok := truncateObject(trimmed, len(s), max); ok {
				return out
			}
		}
	}
	return truncateText(s, max)
}

// truncateText cuts s at a rune boundary so that s[:cut] plus the notice
// fits in max.
func truncateText(s string, max int) string {
	notice := func(shown int) string {
		return fmt.Sprintf("\n[output truncated: showing %d of %d bytes]", shown, len(s))
	}
	cut := max - len(notice(max))
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + notice(cut)
}

// truncateArray keeps the leading elements that fit and appends a sentinel.
func truncateArray(b []byte, total, max int) (string, bool) {
	var elems []json.RawMessage
	if err := json.Unmarshal(b, &elems); err != nil {
		return "", false
	}
	sentinel := func(omitted int) []byte {
		out, _ := json.Marshal(map[string]any{"_truncated": true, "omitted_elements": omitted, "total_bytes": total})
		return out
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	kept := 0
	for _, e := range elems {
		var c bytes.Buffer
		if err := json.Compact(&c, e); err != nil {
			return "", false
		}
		// room for this element, a comma, the sentinel and the closing bracket
		if buf.Len()+c.Len()+1+len(sentinel(len(elems)))+1 > max {
			break
		}
		buf.Write(c.Bytes())
		buf.WriteByte(',')
		kept++
	}
	buf.Write(sentinel(len(elems) - kept))
	buf.WriteByte(']')
	if buf.Len() > max {
		return "", false
	}
	return buf.String(), true
}

// truncateObject wraps the start of an object's text in an envelope.
// Escaping may grow the text (quotes, backslashes, control characters), so
// the cut shrinks in proportion until the envelope fits.
func truncateObject(b []byte, total, max int) (string, bool) {
	prefix := min(len(b), max-64)
	for range 16 {
		if prefix <= 0 {
			return "", false
		}
		p := prefix
		for p > 0 && !utf8.RuneStart(b[p]) {
			p--
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"_truncated_json": string(b[:p]), "total_bytes": total}); err != nil {
			return "", false
		}
		out := bytes.TrimRight(buf.Bytes(), "\n")
		if len(out) <= max {
			return string(out), true
		}
		prefix = p*max/len(out) - 16
	}
	return "", false
}

package actors

import (
	"strconv"
	"strings"
)

// requestTagSep ends the tag inside a request_id; it is not allowed in a
// tag (a node id), so a tag never passes for the start of another.
const requestTagSep = "."

// RequestID makes the request_id of a command a conversation sends:
// "prefix-nanos-seq", or "prefix-tag.nanos-seq" with a tag.
func RequestID(prefix, tag string, nanos int64, seq uint64) string {
	n := strconv.FormatInt(nanos, 10) + "-" + strconv.FormatUint(seq, 10)
	if tag == "" {
		return prefix + "-" + n
	}
	return prefix + "-" + tag + requestTagSep + n
}

// RequestTagOf returns the tag of a request_id made by RequestID for a
// tool or prompt command; ok is false for any other id (an agent's own,
// a tools_list's, one without a tag).
func RequestTagOf(id string) (tag string, ok bool) {
	rest, found := strings.CutPrefix(id, "tool-")
	if !found {
		if rest, found = strings.CutPrefix(id, "prompt-"); !found {
			return "", false
		}
	}
	tag, _, found = strings.Cut(rest, requestTagSep)
	if !found || tag == "" {
		return "", false
	}
	return tag, true
}

package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// A tool call's arguments with a key twice in one object say two things:
// a Go tool (and most JSON readers) takes the last value, SQLite's
// json_extract, which the audit's documented queries use, and a person
// reading the arguments before approving them see the first. A model that
// wrote {"command": "ls", ...padding..., "command": "rm -rf /srv"} had a
// harmless command shown and approved, and recorded, and the other run.
// Such a call is refused (invalid_params) before anything runs.

// duplicateKeyError is why call is refused when its arguments, or the
// arguments it resolved to (an edge_call's params), hold a key twice in
// one object; "" when they do not.
func duplicateKeyError(call llm.ToolCall, resolved json.RawMessage) string {
	if msg := DuplicateKeyRefusal(call.Name, call.Arguments); msg != "" || bytes.Equal(resolved, call.Arguments) {
		return msg // a tool's own arguments: scanned already
	}
	return DuplicateKeyRefusal(call.Name, resolved)
}

// DuplicateKeyRefusal is why a call of tool with the arguments args is
// refused (invalid_params) when they hold a key twice in one object; ""
// when they do not, or are not JSON (other checks say so). An edge agent
// asks it of every tool command it is sent: a command comes from whoever
// can publish on the agent's commands topic, not only from a node that
// checked it.
func DuplicateKeyRefusal(tool string, args json.RawMessage) string {
	key, at, ok := duplicateKey(args)
	if !ok {
		return ""
	}
	where := "the arguments"
	if at != "" {
		where = "the object at " + at + " of the arguments"
	}
	return fmt.Sprintf("Invalid parameters for %q: the key %q appears twice in %s; give each key once. "+
		"A tool takes the last value, while the audit trail and a person approving the call read the first.", tool, key, where)
}

// duplicateKey returns the first key that appears twice in one object of
// the JSON value b, with the path of that object ("" for the top, then
// ".key" and "[i]" steps); ok is false when every object's keys are
// distinct, or b is not JSON (other checks say so).
func duplicateKey(b []byte) (key, at string, ok bool) {
	type frame struct {
		keys    map[string]struct{} // nil for an array
		wantKey bool                // an object's next string is a key
		step    string              // how the parent reaches this value
		index   int                 // an array's next element
		last    string              // an object's key being read
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack[1:] {
			b.WriteString(f.step)
		}
		return b.String()
	}
	// child is how the top frame reaches the value that starts now.
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.keys != nil {
			return "." + top.last
		}
		top.index++
		return fmt.Sprintf("[%d]", top.index-1)
	}
	done := func() { // a value ended: the object around it wants a key
		if len(stack) > 0 && stack[len(stack)-1].keys != nil {
			stack[len(stack)-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers are skipped, not converted
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false // the end, or not JSON
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{keys: map[string]struct{}{}, wantKey: true, step: child()})
			case '[':
				stack = append(stack, &frame{step: child()})
			default: // '}' or ']'
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			if top := len(stack) - 1; top >= 0 && stack[top].keys != nil && stack[top].wantKey {
				f := stack[top]
				if _, seen := f.keys[t]; seen {
					return t, path(), true
				}
				f.keys[t], f.wantKey, f.last = struct{}{}, false, t
				continue
			}
			child()
			done()
		default:
			child()
			done()
		}
	}
}

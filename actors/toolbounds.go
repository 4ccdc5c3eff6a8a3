package actors

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// Bounds of what one agent's tools list may put into every chat's
// request: the node offers every agent's tools to the model, so without
// them one agent listing 45,000 tools made each chat's request 11 MB and
// every chat fail on the model's context.
const (
	// MaxAgentTools is the most tools kept of one agent, in the order it
	// listed them (128 is also the most tools OpenAI's API takes).
	MaxAgentTools = 128
	// MaxToolDefBytes bounds one tool's definition: its name, description
	// and parameters' schema as JSON. A larger tool is left out.
	MaxToolDefBytes = 16 << 10
)

// boundTools keeps the tools of an agent's list whose parameters are an
// object schema (objectSchema), within MaxToolDefBytes each and
// MaxAgentTools in all, and says what it left out ("" when nothing).
func boundTools(tools []wire.ToolInfo) (kept []wire.ToolInfo, why string) {
	kept = make([]wire.ToolInfo, 0, min(len(tools), MaxAgentTools))
	large, bad := 0, 0
	var named []string // the first few tools left out for their schema, and why
	for _, t := range tools {
		params, wrong := objectSchema(t.Parameters)
		if wrong != "" {
			if bad++; bad <= maxNamedTools {
				named = append(named, fmt.Sprintf("%.64q (%s)", t.Name, wrong))
			}
			continue
		}
		t.Parameters = params
		if toolDefBytes(t) > MaxToolDefBytes {
			large++
			continue
		}
		if len(kept) < MaxAgentTools {
			kept = append(kept, t)
		}
	}
	var parts []string
	if bad > 0 {
		if bad > maxNamedTools {
			named = append(named, fmt.Sprintf("and %d more", bad-maxNamedTools))
		}
		parts = append(parts, fmt.Sprintf("%d tools whose parameters are not an object schema left out: %s", bad, strings.Join(named, ", ")))
	}
	over := len(tools) - bad - large - len(kept)
	switch {
	case large > 0 && over > 0:
		parts = append(parts, fmt.Sprintf("%d tools larger than %d bytes and %d beyond the first %d left out", large, MaxToolDefBytes, over, MaxAgentTools))
	case large > 0:
		parts = append(parts, fmt.Sprintf("%d tools larger than %d bytes left out", large, MaxToolDefBytes))
	case over > 0:
		parts = append(parts, fmt.Sprintf("%d tools beyond the first %d left out", over, MaxAgentTools))
	}
	return kept, strings.Join(parts, "; ")
}

// maxNamedTools is how many tools left out for their schema the warning
// names: the agent's author has to fix each.
const maxNamedTools = 4

// objectSchema checks that p, a tool's parameters, can go to a model as
// a function's parameters: an object schema at the top level, which the
// OpenAI and Anthropic APIs require of every tool of a request. One tool
// that is not made each of them refuse the whole request (HTTP 400,
// "schema must be a JSON Schema of 'type: \"object\"'"), so a single
// agent listing one failed every chat of the node, whichever tools it
// used. It returns the schema to offer, or why the tool is left out.
//
// What a peer plausibly meant is repaired in a copy: no schema or an empty
// one is nil (the providers' empty object schema); a schema without type
// gets type object; "properties": [] (an empty object as PHP encodes it)
// becomes {}; "required": null is dropped. A type other than "object", or
// properties or required of another JSON type, leaves the tool out: its
// arguments, always an object, could never be valid. Nested schemas are
// the agent's business, as at call time (validateArgs).
func objectSchema(p map[string]any) (map[string]any, string) {
	if len(p) == 0 {
		return nil, ""
	}
	props, hasProps := p["properties"]
	req, hasReq := p["required"]
	typ, hasType := p["type"]
	switch {
	case hasType && typ != "object":
		return nil, fmt.Sprintf("type %.32s", compactJSON(typ))
	case hasProps && !isObjectOrEmptyArray(props):
		return nil, fmt.Sprintf("properties %.32s", compactJSON(props))
	case hasReq && req != nil && !isStringList(req):
		return nil, fmt.Sprintf("required %.32s", compactJSON(req))
	}
	if hasType && (!hasProps || props != nil && !isEmptyArray(props)) && (!hasReq || req != nil) {
		return p, "" // as it is: the common case
	}
	out := make(map[string]any, len(p)+1)
	for k, v := range p {
		out[k] = v
	}
	out["type"] = "object"
	if isEmptyArray(props) || hasProps && props == nil {
		out["properties"] = map[string]any{}
	}
	if hasReq && req == nil {
		delete(out, "required")
	}
	return out, ""
}

func isEmptyArray(v any) bool { a, ok := v.([]any); return ok && len(a) == 0 }

func isObjectOrEmptyArray(v any) bool {
	_, ok := v.(map[string]any)
	return ok || v == nil || isEmptyArray(v)
}

func isStringList(v any) bool {
	a, ok := v.([]any)
	for _, x := range a {
		if _, s := x.(string); !s {
			return false
		}
	}
	return ok
}

// compactJSON is v as JSON, for a log line.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	return string(b)
}

// toolDefBytes is the size of what the model would be sent of t.
func toolDefBytes(t wire.ToolInfo) int {
	n := len(t.Name) + len(t.Description)
	if n > MaxToolDefBytes {
		return n
	}
	b, err := json.Marshal(t.Parameters)
	if err != nil {
		return MaxToolDefBytes + 1
	}
	return n + len(b)
}

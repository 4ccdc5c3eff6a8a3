package actors

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Tool categories. A tool's category picks its default timeout and the
// maximum any timeout of the tool may reach (the spec's table).
const (
	CategoryFile     = "file"      // read, write, edit, find, grep
	CategoryWeb      = "web"       // web search and fetch
	CategoryExec     = "exec"      // bash and other command execution
	CategoryGit      = "git"       // git operations
	CategoryEdgeCall = "edge_call" // a natural-language prompt to an edge agent's own loop
	CategoryOther    = "other"     // everything else
)

// TimeoutRule is the default and the maximum timeout of a category.
type TimeoutRule struct {
	// Default applies when the tool states no timeout of its own.
	Default time.Duration
	// Max clamps any timeout of the tool, its own included.
	Max time.Duration
}

// DefaultTimeoutRules are the spec's per-category timeouts. An edge_call
// prompt waits 60 s by default (the spec) and at most 10 min, since the
// agent's own model may be a slow local one.
var DefaultTimeoutRules = map[string]TimeoutRule{
	CategoryFile:     {Default: 5 * time.Second, Max: 30 * time.Second},
	CategoryWeb:      {Default: 30 * time.Second, Max: 120 * time.Second},
	CategoryExec:     {Default: 30 * time.Second, Max: 300 * time.Second},
	CategoryGit:      {Default: 60 * time.Second, Max: 300 * time.Second},
	CategoryEdgeCall: {Default: 60 * time.Second, Max: 600 * time.Second},
	CategoryOther:    {Default: 10 * time.Second, Max: 60 * time.Second},
}

// Category returns the category of a tool from the category it declares
// (skill metadata) or, when it declares none we know, from its name.
func Category(declared, name string) string {
	switch strings.ToLower(declared) {
	case CategoryFile, "fs", "filesystem", "files":
		return CategoryFile
	case CategoryWeb, "network", "http":
		return CategoryWeb
	case CategoryExec, "shell", "bash", "execution":
		return CategoryExec
	case CategoryGit:
		return CategoryGit
	case CategoryEdgeCall:
		return CategoryEdgeCall
	}
	n := strings.ToLower(name)
	switch {
	case n == "read" || n == "write" || n == "edit" || n == "find" || n == "grep" || n == "glob" || n == "ls" || n == "apply_patch":
		return CategoryFile
	case n == "bash" || n == "exec" || n == "shell":
		return CategoryExec
	case strings.HasPrefix(n, "web"):
		return CategoryWeb
	case strings.HasPrefix(n, "git"):
		return CategoryGit
	}
	return CategoryOther
}

// toolTimeout returns the timeout of one call: the tool's own (ownMS > 0)
// or its category's default, clamped at the category's maximum.
func toolTimeout(rules map[string]TimeoutRule, category string, ownMS int64) time.Duration {
	r, ok := rules[category]
	if !ok {
		r = rules[CategoryOther]
	}
	if r.Default <= 0 {
		r = DefaultTimeoutRules[CategoryOther]
	}
	d := r.Default
	if ownMS > 0 {
		d = time.Duration(ownMS) * time.Millisecond
	}
	if r.Max > 0 && d > r.Max {
		d = r.Max
	}
	return d
}

// ArgTimeoutGrace is what a call's timeout adds to the timeout_ms its
// arguments ask for, so that the tool's own limit ends the call first and
// its result says which limit that was.
const ArgTimeoutGrace = time.Second

// callOwnTimeoutMS is the own timeout of one call of t with args: the
// timeout_ms argument plus ArgTimeoutGrace when the tool's parameters
// declare timeout_ms (bash), else the tool's own timeout. toolTimeout
// still clamps it at the category's maximum.
func callOwnTimeoutMS(t Target, args map[string]any) int64 {
	if t.Prompt != nil {
		return t.OwnTimeoutMS
	}
	props, _ := t.Schema["properties"].(map[string]any)
	if _, ok := props["timeout_ms"]; !ok {
		return t.OwnTimeoutMS
	}
	// Far beyond any category's maximum; keeps the sum below overflow.
	const ceiling = float64(24 * time.Hour / time.Millisecond)
	switch v := args["timeout_ms"].(type) {
	case float64:
		if v >= 1 {
			return int64(min(v, ceiling)) + ArgTimeoutGrace.Milliseconds()
		}
	case json.Number:
		if f, err := v.Float64(); err == nil && f >= 1 {
			return int64(min(f, ceiling)) + ArgTimeoutGrace.Milliseconds()
		}
	}
	return t.OwnTimeoutMS
}

// schemaCacheLimit bounds the compiled schemas kept; past it the cache
// starts over (schemas change only when agents re-advertise).
const schemaCacheLimit = 1024

// schemaCache compiles tool parameter schemas once.
type schemaCache struct {
	mu sync.Mutex // guards m
	m  map[string]*jsonschema.Resolved
}

// validateArgs checks args against a tool's JSON schema. It returns "" when
// they are valid, else a message in the spec's words that names the problem
// and lists the required and optional parameters. A schema that cannot be
// compiled validates nothing (the agent still validates on its side).
func (c *schemaCache) validateArgs(tool string, schema map[string]any, args map[string]any) string {
	if len(schema) == 0 {
		return ""
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return ""
	}
	key := string(raw)
	c.mu.Lock()
	rs, ok := c.m[key]
	c.mu.Unlock()
	if !ok {
		var s jsonschema.Schema
		if json.Unmarshal(raw, &s) == nil {
			rs, _ = s.Resolve(nil)
		}
		c.mu.Lock()
		if c.m == nil || len(c.m) >= schemaCacheLimit {
			c.m = map[string]*jsonschema.Resolved{}
		}
		c.m[key] = rs
		c.mu.Unlock()
	}
	if rs == nil {
		return ""
	}
	// Validate wants values as encoding/json decodes them into any.
	var inst any
	if b, err := json.Marshal(args); err == nil && json.Unmarshal(b, &inst) == nil {
		if err := rs.Validate(inst); err == nil {
			return ""
		} else {
			return fmt.Sprintf("Invalid parameters for %q: %s. %s", tool, schemaProblem(schema, args, err), paramLists(schema))
		}
	}
	return fmt.Sprintf("Invalid parameters for %q: arguments are not JSON. %s", tool, paramLists(schema))
}

// schemaProblem names what is wrong in the words a model acts on: missing
// and unknown parameters first, else the validator's own message.
func schemaProblem(schema, args map[string]any, err error) string {
	props, _ := schema["properties"].(map[string]any)
	var missing, unknown []string
	for _, r := range stringList(schema["required"]) {
		if _, ok := args[r]; !ok {
			missing = append(missing, fmt.Sprintf("%q", r))
		}
	}
	if ap, ok := schema["additionalProperties"].(bool); ok && !ap {
		for k := range args {
			if _, ok := props[k]; !ok {
				unknown = append(unknown, fmt.Sprintf("%q", k))
			}
		}
	}
	sort.Strings(unknown)
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		parts = append(parts, "unknown "+strings.Join(unknown, ", "))
	}
	if len(parts) > 0 {
		return strings.Join(parts, "; ")
	}
	msg := err.Error()
	if i := strings.Index(msg, ": "); i > 0 && strings.HasPrefix(msg, "validating") {
		msg = msg[i+2:]
	}
	return msg
}

// paramLists renders "Required: [a, b]. Optional: [c]." from a schema.
func paramLists(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	req := stringList(schema["required"])
	isReq := map[string]bool{}
	for _, r := range req {
		isReq[r] = true
	}
	var opt []string
	for k := range props {
		if !isReq[k] {
			opt = append(opt, k)
		}
	}
	sort.Strings(opt)
	return fmt.Sprintf("Required: [%s]. Optional: [%s].", strings.Join(req, ", "), strings.Join(opt, ", "))
}

// stringList reads a JSON array of strings as decoded into any ([]any) or
// built in Go ([]string).
func stringList(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// llmErrorType classifies a failed completion for the audit trail with the
// provider layer's stable kinds (timeout, rate_limited, auth, ...).
func llmErrorType(err error, timedOut bool) string {
	if timedOut {
		return string(llm.KindTimeout)
	}
	return string(llm.KindOf(err))
}

// Package textcalls recovers tool calls that a model wrote as text instead
// of returning them as structured tool calls. Local servers (llama.cpp,
// Ollama) pass a model's output through unchanged when their chat template
// does not recognise its tool-call syntax, so the call arrives in the
// message content:
//
//	Hermes, Qwen:  <tool_call>{"name": "t", "arguments": {...}}</tool_call>
//	Mistral:       [TOOL_CALLS] [{"name": "t", "arguments": {...}}]
//	               [TOOL_CALLS]t[ARGS]{...}
//	Llama 3:       <|python_tag|>{"name": "t", "parameters": {...}}
//	plain JSON:    {"name": "t", "parameters": {...}}, bare or in a ```json fence
//
// Only calls that name an offered tool are recovered; any other text,
// including JSON in an ordinary answer, stays text. Plain JSON (without a
// marker) must also hold nothing but a call's keys (name, arguments or
// parameters, id, type), so an answer that happens to contain
// {"name": "kitchen", "temp": 21} is never taken for a call.
//
// Parse finds the calls; Recover applies it to a response; Provider wraps
// any llm.Provider to do so on every answer, and can also offer the tools
// in the system prompt to models that have no native tool support.
//
// Parse scans at most MaxScan bytes of a message and examines at most
// workBudget bytes in all, however they repeat markers; input it does not
// understand is left as text and never panics.
package textcalls

import (
	"encoding/json"
	"strings"
)

// MaxScan bounds the bytes of one message that Parse looks at; text beyond
// it is kept unchanged. Tool calls are a few hundred bytes; an answer of a
// MiB is prose, not a call.
const MaxScan = 1 << 20

// bareBudget bounds the bytes scanned while matching brackets of unmarked
// JSON candidates that never close, which would otherwise make a text full
// of stray '{' quadratic.
const bareBudget = 4 * MaxScan

// workBudget bounds the bytes all searches and bracket matches of one
// Parse examine; past it the rest of the text stays text. Each marker that
// does not open a call may be searched past up to the end of the text (an
// unclosed tag or bracket), so text of repeated markers is quadratic
// without it: a MiB of "<|python_tag|>{" took four minutes of CPU, which
// no timeout interrupts. Real answers examine a few times their length.
const workBudget = 32 * MaxScan

// Call is a tool call found in text. Arguments is the model's argument
// text, to be passed through llm.ParseArguments like any other call's.
type Call struct {
	Name      string
	Arguments []byte
}

// Markers that introduce calls.
const (
	hermesOpen   = "<tool_call>"
	hermesClose  = "</tool_call>"
	mistralTag   = "[TOOL_CALLS]"
	mistralArgs  = "[ARGS]"
	mistralID    = "[CALL_ID]"
	pythonTag    = "<|python_tag|>"
	fence        = "```"
	bareObject   = "{"
	llamaEOM     = "<|eom_id|>"
	llamaEOT     = "<|eot_id|>"
	maxNameBytes = 256
)

// Parse returns text without the tool calls written in it, and those calls
// in order. offered reports whether a name is a tool of the request; a
// call naming anything else is left as text. When no call is found, rest
// is text unchanged and calls is nil.
func Parse(text string, offered func(name string) bool) (rest string, calls []Call) {
	if offered == nil || text == "" {
		return text, nil
	}
	scan, tail := text, ""
	if len(scan) > MaxScan {
		scan, tail = text[:MaxScan], text[MaxScan:]
	}
	p := &parser{s: scan, offered: offered, budget: bareBudget}
	p.run()
	if len(p.calls) == 0 {
		return text, nil
	}
	p.out.WriteString(tail)
	return strings.TrimSpace(p.out.String()), p.calls
}

// parser holds one Parse.
type parser struct {
	s       string
	offered func(string) bool
	out     strings.Builder
	calls   []Call
	// budget is what is left of bareBudget.
	budget int
	// work counts the bytes examined by searches and bracket matches
	// (index, span), bounded by workBudget.
	work int
	// next caches the next index of each marker at or after the cursor
	// (-1: none left), so that finding candidates stays linear.
	next [5]int
}

var markers = [5]string{hermesOpen, mistralTag, pythonTag, fence, bareObject}

func (p *parser) run() {
	for k := range p.next {
		p.next[k] = -2 // not searched yet
	}
	i := 0
	for i < len(p.s) && p.work <= workBudget {
		k, at := p.candidate(i)
		if k < 0 {
			break
		}
		end, calls := p.try(k, at)
		if calls != nil {
			p.out.WriteString(p.s[i:at])
			p.calls = append(p.calls, calls...)
			i = end
			continue
		}
		// Not a call: keep the text up to where the next search starts.
		p.out.WriteString(p.s[i:end])
		i = end
	}
	if i < len(p.s) {
		p.out.WriteString(p.s[i:])
	}
}

// candidate returns the earliest marker at or after i (its kind and
// index), or -1.
func (p *parser) candidate(i int) (int, int) {
	best, at := -1, len(p.s)
	for k, m := range markers {
		if p.next[k] == -1 {
			continue
		}
		if p.next[k] < i {
			j := strings.Index(p.s[i:], m)
			if j < 0 {
				p.next[k] = -1
				continue
			}
			p.next[k] = i + j
		}
		if p.next[k] < at {
			best, at = k, p.next[k]
		}
	}
	return best, at
}

// try parses the candidate of kind k at index at. It returns where the
// scan continues and the calls found (nil: the text stays text).
func (p *parser) try(k, at int) (int, []Call) {
	switch markers[k] {
	case hermesOpen:
		return p.hermes(at)
	case mistralTag:
		return p.mistral(at)
	case pythonTag:
		return p.python(at)
	case fence:
		return p.fenced(at)
	default:
		return p.bare(at)
	}
}

// hermes reads <tool_call>...</tool_call>; the closing tag may be missing
// at the end of a cut answer or before the next opening tag.
func (p *parser) hermes(at int) (int, []Call) {
	start := at + len(hermesOpen)
	bodyEnd, end := len(p.s), len(p.s)
	if j := p.index(p.s[start:], hermesClose); j >= 0 {
		bodyEnd, end = start+j, start+j+len(hermesClose)
	}
	if j := p.index(p.s[start:bodyEnd], hermesOpen); j >= 0 {
		bodyEnd, end = start+j, start+j
	}
	if calls := p.block(p.s[start:bodyEnd]); calls != nil {
		return end, calls
	}
	return start, nil
}

// python reads Llama 3's <|python_tag|> followed by JSON calls separated
// by ';', up to <|eom_id|>, <|eot_id|> or the end.
func (p *parser) python(at int) (int, []Call) {
	start := at + len(pythonTag)
	bodyEnd, end := len(p.s), len(p.s)
	for _, term := range []string{llamaEOM, llamaEOT} {
		if j := p.index(p.s[start:bodyEnd], term); j >= 0 {
			bodyEnd, end = start+j, start+j+len(term)
		}
	}
	if calls := p.block(p.s[start:bodyEnd]); calls != nil {
		return end, calls
	}
	return start, nil
}

// mistral reads [TOOL_CALLS] followed by a JSON list (or object) of calls,
// or by the newer name[ARGS]{...} form, possibly repeated.
func (p *parser) mistral(at int) (int, []Call) {
	start := at + len(mistralTag)
	i := skipSpace(p.s, start)
	if i < len(p.s) && (p.s[i] == '[' || p.s[i] == '{') {
		e := p.span(p.s, i)
		if e < 0 {
			return start, nil
		}
		if calls, ok := p.callsOf([]byte(p.s[i:e]), false); ok {
			return e, calls
		}
		return start, nil
	}
	// name[ARGS]{...} or name[CALL_ID]id[ARGS]{...}
	a := strings.Index(p.s[i:min(len(p.s), i+maxNameBytes+len(mistralArgs)+64)], mistralArgs)
	if a < 0 {
		return start, nil
	}
	name := p.s[i : i+a]
	if c := strings.Index(name, mistralID); c >= 0 {
		name = name[:c]
	}
	name = strings.TrimSpace(name)
	j := skipSpace(p.s, i+a+len(mistralArgs))
	if !p.offered(name) || j >= len(p.s) || p.s[j] != '{' {
		return start, nil
	}
	e := p.span(p.s, j)
	if e < 0 {
		// A cut answer: the call is kept with its broken arguments so the
		// model learns what went wrong.
		e = len(p.s)
	}
	return e, []Call{{Name: name, Arguments: []byte(p.s[j:e])}}
}

// fenced reads a ``` fence whose language is empty, json or tool_call;
// a fence that holds no call is kept whole, so its JSON is not read again.
func (p *parser) fenced(at int) (int, []Call) {
	start := at + len(fence)
	nl := p.index(p.s[start:], "\n")
	if nl < 0 {
		return start, nil
	}
	lang := strings.ToLower(strings.TrimSpace(p.s[start : start+nl]))
	bodyStart := start + nl + 1
	c := p.index(p.s[bodyStart:], fence)
	if c < 0 {
		return start, nil
	}
	end := bodyStart + c + len(fence)
	switch lang {
	case "", "json", "tool_call", "tool_calls":
	default:
		return end, nil
	}
	if calls, ok := p.sequence(p.s[bodyStart:bodyStart+c], true); ok {
		return end, calls
	}
	return end, nil
}

// bare reads a JSON object without a marker. Its keys must be a call's.
func (p *parser) bare(at int) (int, []Call) {
	e := p.span(p.s, at)
	if e < 0 {
		// Unbalanced: charge the scan and move on by one byte; once the
		// budget is spent, stop looking for unmarked JSON.
		p.budget -= len(p.s) - at
		if p.budget <= 0 {
			p.next[len(markers)-1] = -1
		}
		return at + 1, nil
	}
	if calls, ok := p.callsOf([]byte(p.s[at:e]), true); ok {
		return e, calls
	}
	return e, nil
}

// block reads the body of a marked block: JSON calls, possibly fenced,
// separated by white space, commas or semicolons. A body that is cut short
// still yields its call when the name can be read, with the broken
// arguments kept for the loop to reject.
func (p *parser) block(body string) []Call {
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, fence) {
		if nl := p.index(body, "\n"); nl >= 0 {
			body = strings.TrimSuffix(strings.TrimSpace(body[nl+1:]), fence)
		}
	}
	if calls, ok := p.sequence(body, false); ok {
		return calls
	}
	return p.truncated(body)
}

// sequence reads one or more JSON calls separated by white space, commas
// or semicolons; every value must be a call.
func (p *parser) sequence(body string, strict bool) ([]Call, bool) {
	var calls []Call
	i := 0
	for {
		for i < len(body) && strings.IndexByte(" \t\r\n,;", body[i]) >= 0 {
			i++
		}
		if i == len(body) {
			break
		}
		if body[i] != '{' && body[i] != '[' {
			return nil, false
		}
		e := p.span(body, i)
		if e < 0 {
			return nil, false
		}
		cs, ok := p.callsOf([]byte(body[i:e]), strict)
		if !ok {
			return nil, false
		}
		calls = append(calls, cs...)
		i = e
	}
	return calls, len(calls) > 0
}

// truncated recovers a marked call whose JSON never closes, such as
// {"name": "t", "arguments": {"path": "/etc/ho
func (p *parser) truncated(body string) []Call {
	if !strings.HasPrefix(body, "{") || p.span(body, 0) >= 0 {
		return nil
	}
	name, ok := p.stringAfterKey(body, "name")
	if !ok || !p.offered(name) {
		return nil
	}
	for _, key := range argKeys {
		k := p.index(body, `"`+key+`"`)
		if k < 0 {
			continue
		}
		v := skipSpace(body, k+len(key)+2)
		if v < len(body) && body[v] == ':' {
			return []Call{{Name: name, Arguments: []byte(strings.TrimSpace(body[v+1:]))}}
		}
	}
	return []Call{{Name: name}}
}

// stringAfterKey reads the JSON string value of the first "key": in s.
func (p *parser) stringAfterKey(s, key string) (string, bool) {
	k := p.index(s, `"`+key+`"`)
	if k < 0 {
		return "", false
	}
	v := skipSpace(s, k+len(key)+2)
	if v >= len(s) || s[v] != ':' {
		return "", false
	}
	v = skipSpace(s, v+1)
	var out string
	dec := json.NewDecoder(strings.NewReader(s[v:min(len(s), v+maxNameBytes+2)]))
	if dec.Decode(&out) != nil {
		return "", false
	}
	return out, true
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// index is strings.Index counting the bytes it examines in p.work.
func (p *parser) index(s, sub string) int {
	j := strings.Index(s, sub)
	if j < 0 {
		p.work += len(s)
	} else {
		p.work += j + len(sub)
	}
	return j
}

// span is span counting the bytes it examines in p.work.
func (p *parser) span(s string, i int) int {
	e := span(s, i)
	if e < 0 {
		p.work += len(s) - i
	} else {
		p.work += e - i
	}
	return e
}

// span returns the end (exclusive) of the JSON object or array that starts
// at s[i], found by balancing brackets outside strings, or -1 when it does
// not close within s.
func span(s string, i int) int {
	depth := 0
	inStr, esc := false, false
	for j := i; j < len(s); j++ {
		c := s[j]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
			if depth < 0 {
				return -1
			}
		}
	}
	return -1
}

package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A message that fails to decode still has to be answered when it names
// the request it belongs to, or its sender waits out its whole timeout.
// The decoder refuses JSON nested deeper than encoding/json's 10000
// levels, and with it every field of the message, so the fields an answer
// needs are read again by a scan of its own (SalvageFields): one pass,
// no recursion, memory a bit per level of nesting, and a rule that cannot
// be talked into another request's id:
//
//   - the whole message must be one syntactically valid JSON object (any
//     depth): a truncated or broken message says nothing for sure, since
//     what follows the break could have repeated the field;
//   - a field is a member of the top-level object, or of an object that is
//     the value of one ("payload.request_id"); the same key anywhere else
//     (deeper, inside an array, inside a string) is not it;
//   - keys are compared as encoding/json compares them: after unescaping
//     ("request\u005fid" is request_id) and without regard to case;
//   - a field that occurs more than once is not read at all (the decoder
//     keeps the last; a scan that kept either could answer for a request
//     the sender did not mean), nor one whose value is not a JSON string.

// maxSalvagedRaw bounds the raw bytes of a string value SalvageFields
// reads (quotes and escapes included): room for a request_id of
// MaxRequestIDLen written with every byte escaped. Longer values are
// counted but not read.
const maxSalvagedRaw = 6*MaxRequestIDLen + 2

// Salvaged is one field a scan looked for.
type Salvaged struct {
	// Count is how many times the field occurs.
	Count int
	// Value is its string value, set only when Count is 1 and the value
	// is a JSON string of at most maxSalvagedRaw raw bytes.
	Value string
	// IsString reports that Value was read.
	IsString bool
}

// One returns the field's value when it occurs once as a string.
func (s Salvaged) One() (string, bool) {
	if s.Count != 1 || !s.IsString {
		return "", false
	}
	return s.Value, true
}

// SalvageFields scans b, one JSON object of at most MaxMessageBytes at any
// depth, for the fields named by want ("request_id" for a member of the
// top-level object, "payload.request_id" for a member of the object that is
// the value of the top-level "payload"). It returns one Salvaged for each,
// in the order of want, and false with nothing counted when b is not one
// syntactically valid JSON object. It never recurses: its work is linear
// in len(b), its memory a bit per level of nesting.
func SalvageFields(b []byte, want ...string) ([]Salvaged, bool) {
	s := salvageScan{b: b, want: want, got: make([]Salvaged, len(want))}
	if len(b) > MaxMessageBytes || !s.run() {
		return make([]Salvaged, len(want)), false
	}
	return s.got, true
}

// SalvageRequestID returns the top-level request_id of a command that
// failed decoding, by the rule of SalvageFields, when it is a non-empty
// string of at most MaxRequestIDLen bytes; "" otherwise.
func SalvageRequestID(b []byte) string {
	got, ok := SalvageFields(b, "request_id")
	if !ok {
		return ""
	}
	id, ok := got[0].One()
	if !ok || id == "" || len(id) > MaxRequestIDLen {
		return ""
	}
	return id
}

// salvageScan is the state of one SalvageFields.
type salvageScan struct {
	b    []byte
	i    int
	want []string
	got  []Salvaged
	// objects has bit d set when the container at depth d+1 is an object.
	objects []uint64
	depth   int
	// key1 is the key of the top-level member being read; key1OK is
	// false when it is too long to be wanted.
	key1   []byte
	key1OK bool
	// inner is true while the container at depth 2 is an object that is
	// the value of the member key1.
	inner bool
	// field is the index in want of the member whose value comes next,
	// -1 for none.
	field int
}

// The states of salvageScan.run: what the next token may be.
const (
	expectValue        = iota
	expectValueOrClose // after '['
	expectKey          // after ',' in an object
	expectKeyOrClose   // after '{'
	expectColon
	expectNext // after a value: ',' or a closing bracket
)

func (s *salvageScan) run() bool {
	s.field = -1
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	state := expectValue
	for {
		s.skipSpace()
		if s.i >= len(s.b) {
			return state == expectNext && s.depth == 0
		}
		c := s.b[s.i]
		if state == expectNext && s.depth == 0 {
			return false // data after the object
		}
		switch state {
		case expectValue, expectValueOrClose:
			switch {
			case c == ']' && state == expectValueOrClose:
				if !s.close(false) {
					return false
				}
				state = expectNext
			case c == '{' || c == '[':
				s.count(nil)
				s.open(c == '{')
				state = expectValueOrClose
				if c == '{' {
					state = expectKeyOrClose
				}
			case c == '"':
				raw, ok := s.take(s.str())
				if !ok {
					return false
				}
				s.count(raw)
				state = expectNext
			default:
				if _, ok := s.take(s.scalar()); !ok {
					return false
				}
				s.count(nil)
				state = expectNext
			}
		case expectKey, expectKeyOrClose:
			switch {
			case c == '}' && state == expectKeyOrClose:
				if !s.close(true) {
					return false
				}
				state = expectNext
			case c == '"':
				raw, ok := s.take(s.str())
				if !ok {
					return false
				}
				s.key(raw)
				state = expectColon
			default:
				return false
			}
		case expectColon:
			if c != ':' {
				return false
			}
			s.i++
			state = expectValue
		case expectNext:
			switch c {
			case ',':
				s.i++
				state = expectValue
				if s.isObject() {
					state = expectKey
				}
			case '}', ']':
				if !s.close(c == '}') {
					return false
				}
			default:
				return false
			}
		}
	}
}

// take returns the token from s.i to end and moves past it; false when
// end is -1 (no token).
func (s *salvageScan) take(end int) ([]byte, bool) {
	if end < 0 {
		return nil, false
	}
	t := s.b[s.i:end]
	s.i = end
	return t, true
}

func (s *salvageScan) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// open enters a container at s.i.
func (s *salvageScan) open(object bool) {
	w, bit := s.depth/64, uint(s.depth%64)
	if w == len(s.objects) {
		s.objects = append(s.objects, 0)
	}
	if object {
		s.objects[w] |= 1 << bit
	} else {
		s.objects[w] &^= 1 << bit
	}
	s.depth++
	if s.depth == 2 {
		s.inner = object && s.key1OK
	}
	s.i++
}

// close leaves the container at s.i, which must be of the kind closed.
func (s *salvageScan) close(object bool) bool {
	if s.depth == 0 || s.isObject() != object {
		return false
	}
	s.depth--
	if s.depth < 2 {
		s.inner = false
	}
	s.i++
	return true
}

// isObject reports whether the innermost open container is an object.
func (s *salvageScan) isObject() bool {
	d := s.depth - 1
	return d >= 0 && s.objects[d/64]&(1<<uint(d%64)) != 0
}

// key takes the raw key of a member (quotes included) and sets s.field to
// the wanted field it is, if any.
func (s *salvageScan) key(raw []byte) {
	s.field = -1
	switch {
	case s.depth == 1:
		s.key1, s.key1OK = keyName(raw)
		if !s.key1OK {
			return
		}
		for n, w := range s.want {
			if bytes.IndexByte([]byte(w), '.') < 0 && bytes.EqualFold([]byte(w), s.key1) {
				s.field = n
				return
			}
		}
	case s.depth == 2 && s.inner:
		k, ok := keyName(raw)
		if !ok {
			return
		}
		for n, w := range s.want {
			outer, inner, dotted := bytes.Cut([]byte(w), []byte("."))
			if dotted && bytes.EqualFold(outer, s.key1) && bytes.EqualFold(inner, k) {
				s.field = n
				return
			}
		}
	}
}

// count records the value of the member s.field names: raw is the JSON
// string (quotes included), or nil for any other value.
func (s *salvageScan) count(raw []byte) {
	if s.field < 0 {
		return
	}
	g := &s.got[s.field]
	s.field = -1
	g.Count++
	g.Value, g.IsString = "", false
	if g.Count == 1 && raw != nil && len(raw) <= maxSalvagedRaw && json.Unmarshal(raw, &g.Value) == nil {
		g.IsString = true
	}
}

// maxWantedKey bounds the raw length of a key worth unescaping: no wanted
// name is longer than 24 bytes, each written as at most 6.
const maxWantedKey = 6*24 + 2

// keyName unescapes a raw key (quotes included); false when it is too long
// to be one of the wanted names.
func keyName(raw []byte) ([]byte, bool) {
	if len(raw) > maxWantedKey {
		return nil, false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], true
	}
	var k string
	if json.Unmarshal(raw, &k) != nil {
		return nil, false
	}
	return []byte(k), true
}

// str returns the end (one past the closing quote) of the JSON string at
// s.i, or -1 when it is not one.
func (s *salvageScan) str() int {
	b := s.b
	for j := s.i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		case c == '\\':
			j++
			if j >= len(b) {
				return -1
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return -1
				}
				for _, h := range b[j+1 : j+5] {
					if !isHex(h) {
						return -1
					}
				}
				j += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scalar returns the end of the number or literal at s.i, or -1 when
// there is none.
func (s *salvageScan) scalar() int {
	b, j := s.b, s.i
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(b[j:], []byte(lit)) {
			return j + len(lit)
		}
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		j = digits(b, j)
	default:
		return -1
	}
	if j < len(b) && b[j] == '.' {
		k := digits(b, j+1)
		if k == j+1 {
			return -1
		}
		j = k
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digits(b, j)
		if k == j {
			return -1
		}
		j = k
	}
	return j
}

// digits returns the end of the run of digits at j.
func digits(b []byte, j int) int {
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	return j
}

// SalvageReport turns a result or error report from topicAgent that failed
// decoding (cause) into an error report for the call it answers, so that
// the call ends now rather than at its timeout. The request id is read by
// the rule of SalvageFields: payload.request_id of an envelope whose
// report_type is "result" or "error" and whose payload is given once, or
// the top-level request_id of a flat result; an agent_id, if given, must
// be topicAgent's. The report says the agent's answer could not be read
// (ErrExecutionFailed): whether the tool ran is unknown, so the call is not
// tried again. False when no such id can be read for sure.
func SalvageReport(topicAgent string, b []byte, cause error) (Report, bool) {
	got, ok := SalvageFields(b, "report_type", "agent_id", "status", "request_id", "payload", "payload.request_id")
	if !ok {
		return Report{}, false
	}
	reportType, agentID, status, top, payload, inner := got[0], got[1], got[2], got[3], got[4], got[5]
	if a, one := agentID.One(); agentID.Count > 0 && (!one || a != topicAgent) {
		return Report{}, false
	}
	var id string
	switch t, one := reportType.One(); {
	case reportType.Count == 0:
		if _, flat := status.One(); !flat {
			return Report{}, false
		}
		id, ok = top.One()
	case one && (t == ReportResult || t == ReportError) && payload.Count == 1:
		id, ok = inner.One()
	default:
		return Report{}, false
	}
	if !ok || id == "" || len(id) > MaxRequestIDLen {
		return Report{}, false
	}
	p, err := json.Marshal(ToolResult{Status: StatusError, ErrorType: ErrExecutionFailed, RequestID: id,
		Error: fmt.Sprintf("edge agent %q sent an answer that could not be read: %v", topicAgent, cause)})
	if err != nil {
		return Report{}, false
	}
	return Report{AgentID: topicAgent, ReportType: ReportError, Payload: p}, true
}

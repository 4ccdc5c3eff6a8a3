package mcptools

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxIDBytes bounds the "id" topScanner keeps: longer, it is no id this
// package answers (the SDK's ids are numbers).
const maxIDBytes = 128

// topScanner reads a JSON object as it streams by, byte by byte, keeping
// nothing but its top-level "id" value and whether it has a top-level
// "method": enough to answer a message too large to be kept. It does not
// check that the JSON is valid; answerID does check the id it kept.
type topScanner struct {
	prefix  []byte // bytes expected before the object ("data:")
	matched int    // of prefix
	notMsg  bool   // the prefix did not match: no message

	depth   int  // of objects and arrays
	inStr   bool // inside a string
	esc     bool // after a backslash inside a string
	keyNext bool // at depth 1, the next string is a key
	inKey   bool // the string is a key
	key     []byte
	keyLong bool // the key is longer than any of interest
	colon   bool // at depth 1, a key ended and its ':' is awaited
	isID    bool // that key is "id"

	capturing bool // reading the value of "id"
	id        []byte
	idOK      bool // id holds a whole value
	method    bool // a top-level "method" was seen
}

// feed scans the next bytes. The inside of a string that is neither a
// key nor the id, most of a large message, is skipped to its next quote
// or backslash at once.
func (s *topScanner) feed(b []byte) {
	for len(b) > 0 {
		if s.matched < len(s.prefix) {
			if b[0] != s.prefix[s.matched] {
				s.notMsg = true
			}
			s.matched++
			b = b[1:]
			continue
		}
		if s.notMsg {
			return
		}
		if s.inStr && !s.esc && !s.inKey && !s.capturing {
			i := bytes.IndexAny(b, `"\`)
			if i < 0 {
				return
			}
			b = b[i:]
		}
		s.byte(b[0])
		b = b[1:]
	}
}

func (s *topScanner) byte(c byte) {
	if s.inStr {
		s.strByte(c)
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
		return
	case '"':
		s.inStr = true
		if s.depth == 1 && s.keyNext {
			s.keyNext, s.inKey, s.key, s.keyLong = false, true, s.key[:0], false
			return
		}
	case '{', '[':
		if s.capturing {
			s.capturing, s.idOK = false, false // an object is no id
		}
		s.depth++
		if s.depth == 1 {
			s.keyNext = c == '{'
		}
		return
	case '}', ']':
		if s.depth == 1 {
			s.endValue()
		}
		s.depth--
		return
	case ':':
		if s.depth == 1 && s.colon {
			s.colon = false
			if s.isID {
				s.capturing, s.id, s.idOK = true, s.id[:0], false
			}
		}
		return
	case ',':
		if s.depth == 1 {
			s.endValue()
			s.keyNext = true
		}
		return
	}
	s.capture(c)
}

// strByte scans a byte inside a string.
func (s *topScanner) strByte(c byte) {
	if s.inKey {
		if len(s.key) <= len("method") { // and the closing quote
			s.key = append(s.key, c)
		} else {
			s.keyLong = true
		}
	} else {
		s.capture(c)
	}
	switch {
	case s.esc:
		s.esc = false
		s.keyLong = s.keyLong || s.inKey // an escaped key is none of ours
	case c == '\\':
		s.esc = true
	case c == '"':
		s.inStr = false
		if s.inKey {
			s.inKey, s.colon = false, true
			k := s.key[:len(s.key)-1] // without the closing quote
			s.isID = !s.keyLong && string(k) == "id"
			if !s.keyLong && string(k) == "method" {
				s.method = true
			}
		}
	}
}

// capture keeps c when it is part of the id's value.
func (s *topScanner) capture(c byte) {
	if !s.capturing || s.depth != 1 {
		return
	}
	if len(s.id) == maxIDBytes {
		s.capturing, s.idOK, s.id = false, false, s.id[:0]
		return
	}
	s.id = append(s.id, c)
}

// endValue ends a value at depth 1.
func (s *topScanner) endValue() {
	if s.capturing {
		s.capturing, s.idOK = false, len(s.id) > 0
	}
}

// answerID returns the id of the message scanned when it is an answer: it
// has a top-level id, a number or a string, and no method.
func (s *topScanner) answerID() (jsonrpc.ID, bool) {
	if s.notMsg || s.method || !s.idOK {
		return jsonrpc.ID{}, false
	}
	var v any
	if json.Unmarshal(s.id, &v) != nil {
		return jsonrpc.ID{}, false
	}
	switch v.(type) {
	case float64, string: // as the SDK decodes ids
		id, err := jsonrpc.MakeID(v)
		return id, err == nil
	}
	return jsonrpc.ID{}, false
}

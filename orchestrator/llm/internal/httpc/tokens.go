package httpc

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Tokens is a token count of a server's usage report. Usage says nothing
// about the answer itself, so no value of it may fail one: Tokens decodes
// any JSON value. A whole number from 0 to MaxUsageTokens, written as an
// integer, with a fraction or exponent ("12.0", "1.2e1") or inside a
// string ("12"), is taken; anything else (null, negative, huge, "n/a", a
// fraction, an object) counts as not reported, 0. Before, a count such as
// 12.0 or 1e30 made the whole answer malformed, also in a stream's last
// chunk, after the answer had arrived.
type Tokens int64

// UnmarshalJSON never fails; see Tokens.
func (t *Tokens) UnmarshalJSON(b []byte) error {
	*t = 0
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) != nil {
			return nil
		}
		b = []byte(s)
	}
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		if n >= 0 && n <= MaxUsageTokens {
			*t = Tokens(n)
		}
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err == nil && f >= 0 && f <= MaxUsageTokens && f == math.Trunc(f) {
		*t = Tokens(f)
	}
	return nil
}

// Report is a usage report of type T (a struct of Tokens) decoded
// leniently: a report that is not of T's shape (usage as a list or a
// string) is left zero, counting as absent, instead of failing the answer
// it came with.
type Report[T any] struct{ V T }

// UnmarshalJSON never fails; see Report.
func (r *Report[T]) UnmarshalJSON(b []byte) error {
	var v T
	if json.Unmarshal(b, &v) == nil {
		r.V = v
	}
	return nil
}

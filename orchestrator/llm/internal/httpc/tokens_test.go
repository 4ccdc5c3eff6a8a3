package httpc

import (
	"encoding/json"
	"testing"
)

// FuzzTokens: a token count decodes from any JSON value without failing,
// to a count from 0 to MaxUsageTokens, and a count written as a plain
// integer in that range is kept exactly.
func FuzzTokens(f *testing.F) {
	for _, s := range []string{`12`, `12.0`, `"12"`, `1e30`, `99999999999999999999`, `-3`, `12.5`, `null`, `true`, `{"n":1}`, `[1]`, `"n/a"`, `1073741824`, `1073741825`, `NaN`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return // the outer decoder refuses it before a Tokens sees it
		}
		var v struct {
			N Tokens `json:"n"`
		}
		if err := json.Unmarshal([]byte(`{"n":`+string(b)+`}`), &v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if v.N < 0 || v.N > MaxUsageTokens {
			t.Fatalf("%s decoded to %d, out of [0, %d]", b, v.N, MaxUsageTokens)
		}
		var n int64
		if json.Unmarshal(b, &n) == nil && n >= 0 && n <= MaxUsageTokens && Tokens(n) != v.N {
			t.Fatalf("%s decoded to %d, want %d", b, v.N, n)
		}
	})
}

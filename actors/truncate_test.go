package actors

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateResult(t *testing.T) {
	bigArray := func(n int) string {
		elems := make([]string, n)
		for i := range elems {
			elems[i] = `{"i":` + strings.Repeat("1", 3) + `,"name":"` + strings.Repeat("x", 40) + `"}`
		}
		return "[" + strings.Join(elems, ",") + "]"
	}
	bigObject := `{"k":"` + strings.Repeat(`é\"<`, 3000) + `"}`
	tests := []struct {
		name   string
		in     string
		max    int
		check  func(t *testing.T, out string)
		sameAs bool // within the limit: returned unchanged
	}{
		{"short text unchanged", "hello", 100, nil, true},
		{"text", strings.Repeat("a", 1000), 200, func(t *testing.T, out string) {
			if !strings.Contains(out, "[output truncated: showing") || !strings.Contains(out, "of 1000 bytes]") {
				t.Fatalf("no visible notice: %q", out)
			}
		}, false},
		{"multibyte text cut on a rune boundary", strings.Repeat("€", 500), 301, func(t *testing.T, out string) {
			if !utf8.ValidString(out) {
				t.Fatal("cut inside a rune")
			}
		}, false},
		{"array keeps leading elements and a sentinel", bigArray(500), 2000, func(t *testing.T, out string) {
			var v []map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("not a JSON array any more: %v", err)
			}
			last := v[len(v)-1]
			if last["_truncated"] != true || last["omitted_elements"].(float64) != float64(500-(len(v)-1)) || len(v) < 2 {
				t.Fatalf("sentinel %v after %d kept elements", last, len(v)-1)
			}
		}, false},
		{"object becomes an envelope", bigObject, 4000, func(t *testing.T, out string) {
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("not a JSON object any more: %v", err)
			}
			if s, _ := v["_truncated_json"].(string); !strings.HasPrefix(bigObject, s) || len(s) == 0 {
				t.Fatalf("envelope does not hold the object's start: %.80q", s)
			}
			if v["total_bytes"].(float64) != float64(len(bigObject)) {
				t.Fatalf("total_bytes %v", v["total_bytes"])
			}
		}, false},
		{"invalid JSON is text", "[" + strings.Repeat("1,", 1000), 300, func(t *testing.T, out string) {
			if !strings.Contains(out, "[output truncated") {
				t.Fatalf("%q", out)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := truncateResult(tt.in, tt.max)
			if tt.sameAs {
				if out != tt.in {
					t.Fatalf("changed a result within the limit")
				}
				return
			}
			if len(out) > tt.max {
				t.Fatalf("%d bytes, over the limit %d", len(out), tt.max)
			}
			tt.check(t, out)
		})
	}
}

func FuzzTruncateResult(f *testing.F) {
	f.Add(`[1,2,3]`, 5)
	f.Add(`{"a":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}`, 20)
	f.Add(strings.Repeat("€", 50), 7)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		out := truncateResult(s, max)
		if len(s) <= max {
			if out != s {
				t.Fatal("changed a result within the limit")
			}
			return
		}
		// The notice alone may exceed a tiny limit; beyond that, the
		// result fits.
		if max >= 128 && len(out) > max {
			t.Fatalf("%d bytes over limit %d", len(out), max)
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatal("valid UTF-8 in, invalid out")
		}
	})
}

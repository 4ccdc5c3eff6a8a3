package skills

import (
	"errors"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestNestingBound: a skill.toml nesting arrays or inline tables, or
// dotting a key, deeper than MaxNesting is refused before the TOML parser,
// whose work grows with the square of the depth, sees it; brackets, braces
// and dots in strings and comments do not count. Before, the deep files
// here (at full size) took the loader past 10 minutes and 24 GB.
func TestNestingBound(t *testing.T) {
	const head = "[skill]\nname = \"s\"\n"
	deep := MaxNesting + 1
	for _, tc := range []struct {
		name     string
		body     string
		wantLine int // 0: accepted by the bound
	}{
		{"arrays at the bound", "x = " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + "\n", 0},
		{"arrays past it", "x = " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n", 3},
		{"inline tables past it", "\n[t]\nx = " + strings.Repeat("{a=", deep) + "1" + strings.Repeat("}", deep) + "\n", 5},
		{"a key of many parts", "a" + strings.Repeat(".a", deep) + " = 1\n", 3},
		{"a key at the bound", "a" + strings.Repeat(".a", MaxNesting) + " = 1\n", 0},
		{"many floats on a line", "x = [" + strings.Repeat("1.5, ", 100) + "1.5]\n", 0},
		{"brackets in strings", "a = \"" + strings.Repeat("[{.", 100) + "\"\nb = '" + strings.Repeat("[", 100) + "'\n" +
			"c = \"\"\"\n" + strings.Repeat("{", 100) + "\\\"\"\"\n\"\"\"\nd = '''" + strings.Repeat("[", 100) + "''''\n", 0},
		{"brackets in a comment", "# " + strings.Repeat("[", 100) + "\n", 0},
		{"past it after a string", "s = \"\\\\\"\nx = " + strings.Repeat("[", deep) + "\n", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(head + tc.body)
			if got := tooDeep(data); got != tc.wantLine {
				t.Fatalf("tooDeep = line %d, want %d", got, tc.wantLine)
			}
			_, err := parse("skill.toml", "/skills/s", data)
			var le *LoadError
			if tc.wantLine > 0 && (!errors.As(err, &le) || le.Line != tc.wantLine || !strings.Contains(le.Msg, "nested deeper")) {
				t.Fatalf("parse error %v, want one naming line %d", err, tc.wantLine)
			}
		})
	}
}

// FuzzTooDeep: the nesting scan never panics, names a line of the file,
// and never refuses a file that the TOML parser reads with every bracket,
// brace and dot outside strings kept shallow.
func FuzzTooDeep(f *testing.F) {
	for _, s := range []string{"a = [[1]]\n", "x = \"[[[\" # [[[\n", "s = '''\n[[['''\n", "a.b.c = {d = [1.5]}\n", "\"\"\"\\", "'''a''''"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		line := tooDeep(data)
		if lines := strings.Count(string(data), "\n") + 1; line < 0 || line > lines {
			t.Fatalf("line %d outside a file of %d lines", line, lines)
		}
		if line > 0 && len(data) <= MaxNesting {
			var v map[string]any
			if _, err := toml.Decode(string(data), &v); err == nil {
				t.Fatalf("refused a valid file of %d bytes, too short to nest past %d", len(data), MaxNesting)
			}
		}
	})
}

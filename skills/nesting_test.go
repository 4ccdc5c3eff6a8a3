package skills

import (
	"errors"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
)

// TestNestingBound: a skill.toml nesting arrays or inline tables, or
// dotting a key, deeper than tomlconf.MaxNesting is refused before the TOML parser,
// whose work grows with the square of the depth, sees it; brackets, braces
// and dots in strings and comments do not count. Before, the deep files
// here (at full size) took the loader past 10 minutes and 24 GB.
func TestNestingBound(t *testing.T) {
	const head = "[skill]\nname = \"s\"\n"
	deep := tomlconf.MaxNesting + 1
	for _, tc := range []struct {
		name     string
		body     string
		wantLine int // 0: accepted by the bound
	}{
		{"arrays at the bound", "x = " + strings.Repeat("[", tomlconf.MaxNesting) + strings.Repeat("]", tomlconf.MaxNesting) + "\n", 0},
		{"arrays past it", "x = " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n", 3},
		{"inline tables past it", "\n[t]\nx = " + strings.Repeat("{a=", deep) + "1" + strings.Repeat("}", deep) + "\n", 5},
		{"a key of many parts", "a" + strings.Repeat(".a", deep) + " = 1\n", 3},
		{"a key at the bound", "a" + strings.Repeat(".a", tomlconf.MaxNesting) + " = 1\n", 0},
		{"many floats on a line", "x = [" + strings.Repeat("1.5, ", 100) + "1.5]\n", 0},
		{"brackets in strings", "a = \"" + strings.Repeat("[{.", 100) + "\"\nb = '" + strings.Repeat("[", 100) + "'\n" +
			"c = \"\"\"\n" + strings.Repeat("{", 100) + "\\\"\"\"\n\"\"\"\nd = '''" + strings.Repeat("[", 100) + "''''\n", 0},
		{"brackets in a comment", "# " + strings.Repeat("[", 100) + "\n", 0},
		{"past it after a string", "s = \"\\\\\"\nx = " + strings.Repeat("[", deep) + "\n", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(head + tc.body)
			if got := tomlconf.TooDeep(data); got != tc.wantLine {
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

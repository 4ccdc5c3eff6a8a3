package tomlconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestConfigNestingBound: agent.toml and evoclaw.toml are held to the
// nesting bound a skill.toml is, and the error names the line; a file
// past MaxFileSize is refused before it is read whole.
func TestConfigNestingBound(t *testing.T) {
	type conf struct {
		Name string `toml:"name"`
		X    any    `toml:"x"`
	}
	deep := MaxNesting + 1
	for _, tc := range []struct {
		name, src string
		wantLine  int
	}{
		{"arrays at the bound", "name = \"a\"\nx = " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + "\n", 0},
		{"arrays past it", "name = \"a\"\nx = " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n", 2},
		{"inline tables past it", "name = \"a\"\n\nx = " + strings.Repeat("{a = ", deep) + "1" + strings.Repeat("}", deep) + "\n", 3},
		{"a dotted key past it", "x" + strings.Repeat(".a", deep) + " = 1\n", 1},
		{"brackets in a string", "name = \"" + strings.Repeat("[", 4*deep) + "\"\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "evoclaw.toml")
			if err := os.WriteFile(path, []byte(tc.src), 0o600); err != nil {
				t.Fatal(err)
			}
			var c conf
			_, err := DecodeFile(path, &c)
			if tc.wantLine == 0 {
				if err != nil {
					t.Fatalf("DecodeFile: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTooDeep) || !strings.Contains(err.Error(), "line "+string(rune('0'+tc.wantLine))+":") {
				t.Fatalf("DecodeFile error %v, want ErrTooDeep at line %d", err, tc.wantLine)
			}
			if err := Decode(tc.src, &c); !errors.Is(err, ErrTooDeep) {
				t.Fatalf("Decode error %v, want ErrTooDeep", err)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "agent.toml")
		if err := os.WriteFile(path, []byte("name = \""+strings.Repeat("a", MaxFileSize)+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var c conf
		if _, err := DecodeFile(path, &c); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("DecodeFile of a %d-byte file: %v", MaxFileSize+9, err)
		}
	})
}

// FuzzTooDeep: the nesting scan never panics, names a line of the file,
// and never refuses a file that the TOML parser reads with every bracket,
// brace and dot outside strings kept shallow.
func FuzzTooDeep(f *testing.F) {
	for _, s := range []string{"a = [[1]]\n", "x = \"[[[\" # [[[\n", "s = '''\n[[['''\n", "a.b.c = {d = [1.5]}\n", "\"\"\"\\", "'''a''''"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		line := TooDeep(data)
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

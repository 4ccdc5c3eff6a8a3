package tomlconf

import (
	"strings"
	"testing"
	"time"
)

// TestDecodeValueErrors: a value of the wrong type is refused in the
// words of the file: its line, its key, what the key wants and what it
// got. Before, the decoder's Go types showed through: "toml: line 1 (last
// key "node_id"): incompatible types: TOML value has type int64;
// destination has type string".
func TestDecodeValueErrors(t *testing.T) {
	type conf struct {
		NodeID string        `toml:"node_id"`
		Dirs   []string      `toml:"dirs"`
		On     bool          `toml:"on"`
		N      int           `toml:"n"`
		Rate   float64       `toml:"rate"`
		MaxAge time.Duration `toml:"max_age"`
		Wait   Duration      `toml:"wait"`
		HTTP   struct {
			Listen string `toml:"listen"`
		} `toml:"http"`
		Jobs []struct {
			ID string `toml:"id"`
		} `toml:"jobs"`
	}
	tests := []struct{ src, want string }{
		{"node_id = 5\n", "line 1: node_id: want a string, got an integer"},
		{"\nnode_id = 1.5\n", "line 2: node_id: want a string, got a float"},
		{"node_id = [1]\n", "line 1: node_id: want a string, got an array"},
		{"dirs = \"x\"\n", "line 1: dirs: want an array, got a string"},
		{"on = \"yes\"\n", "line 1: on: want true or false, got a string"},
		{"n = 1.5\n", "line 1: n: want an integer, got a float"},
		{"rate = \"fast\"\n", "line 1: rate: want a number, got a string"},
		{"max_age = true\n", `line 1: max_age: want a duration with its unit, such as "90s", got a boolean`},
		{"wait = \"30\"\n", `line 1: wait: want a duration like "90s"`},
		{"http = 5\n", "line 1: http: want a table, got an integer"},
		{"[http]\nlisten = 8787\n", "line 2: http.listen: want a string, got an integer"},
		{"[[jobs]]\nid = 7\n", "line 2: jobs.id: want a string, got an integer"},
		{"node_id = \"x\n", "strings cannot contain newlines"},
	}
	for _, tt := range tests {
		var c conf
		err := Decode(tt.src, &c)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.src, err, tt.want)
			continue
		}
		for _, goWords := range []string{"incompatible types", "int64", "destination", "last key", "orchestrator."} {
			if strings.Contains(err.Error(), goWords) {
				t.Errorf("%q: err = %v, in the decoder's words", tt.src, err)
			}
		}
	}
}

package skills

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

func TestEncodeArgs(t *testing.T) {
	tests := []struct {
		name  string
		args  map[string]any
		argv  []string
		stdin string
		err   string
	}{
		{name: "none", args: nil, argv: []string{}, stdin: "{}\n"},
		{name: "every kind in sorted order", args: map[string]any{
			"s":   "two words --not-a-flag",
			"b":   true,
			"f":   2.5,
			"i":   3.0,
			"big": 1e21,
			"t":   int64(-7),
			"j":   json.Number("12345678901234567890"),
			"a":   []any{"x", 1.0},
			"o":   map[string]any{"html": "<&>"},
		},
			argv: []string{
				"--a", `["x",1]`, "--b", "true", "--big", "1e+21", "--f", "2.5", "--i", "3",
				"--j", "12345678901234567890", "--o", `{"html":"<&>"}`, "--s", "two words --not-a-flag", "--t", "-7",
			},
			stdin: `{"a":["x",1],"b":true,"big":1e+21,"f":2.5,"i":3,"j":12345678901234567890,"o":{"html":"<&>"},"s":"two words --not-a-flag","t":-7}` + "\n"},
		{name: "NUL cannot be an argument", args: map[string]any{"s": "a\x00b"}, err: `argument "s" contains a NUL byte`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, stdin, err := encodeArgs(tt.args)
			if testenv.WantErr(t, err, tt.err) {
				return
			}
			if !reflect.DeepEqual(argv, tt.argv) || string(stdin) != tt.stdin {
				t.Errorf("argv %q stdin %q\nwant %q %q", argv, stdin, tt.argv, tt.stdin)
			}
		})
	}
}

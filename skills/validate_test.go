package skills

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
)

// typedTool has one optional parameter of every type and one required.
var typedTool = Tool{
	Name: "typed",
	Parameters: Parameters{
		Properties: map[string]Param{
			"s": {Type: TypeString}, "i": {Type: TypeInteger}, "n": {Type: TypeNumber},
			"b": {Type: TypeBoolean}, "a": {Type: TypeArray}, "o": {Type: TypeObject},
			"req": {Type: TypeString},
		},
		Required: []string{"req"},
	},
}

func TestValidateTypes(t *testing.T) {
	tests := []struct {
		name  string
		param string
		value any
		ok    bool
		got   string
	}{
		{"string", "s", "x", true, ""},
		{"string given a number", "s", 1.0, false, "integer"},
		{"integer from JSON", "i", 3.0, true, ""},
		{"integer as json.Number", "i", json.Number("3"), true, ""},
		{"integer as json.Number with exponent", "i", json.Number("3e2"), true, ""},
		{"integer beyond int64 as json.Number", "i", json.Number("9223372036854775808"), false, "integer outside the 64-bit range"},
		{"integer from Go", "i", int64(-7), true, ""},
		{"integer given a fraction", "i", 2.5, false, "non-integer number 2.5"},
		{"integer given 2^63", "i", 9223372036854775808.0, false, "integer outside the 64-bit range"},
		{"integer given -2^63", "i", -9223372036854775808.0, true, ""},
		{"integer given a fractional json.Number", "i", json.Number("2.5"), false, "non-integer number 2.5"},
		{"integer given a string", "i", "3", false, "string"},
		{"integer given a boolean", "i", true, false, "boolean"},
		{"number", "n", 2.5, true, ""},
		{"number from Go int", "n", 2, true, ""},
		{"number as json.Number", "n", json.Number("-1.5e-3"), true, ""},
		{"number given NaN", "n", math.NaN(), false, "non-finite number"},
		{"number given +Inf", "n", math.Inf(1), false, "non-finite number"},
		{"number given a malformed json.Number", "n", json.Number("abc"), false, "malformed number"},
		{"boolean", "b", false, true, ""},
		{"boolean given a string", "b", "true", false, "string"},
		{"array", "a", []any{1.0, "x"}, true, ""},
		{"array of strings from Go", "a", []string{"x"}, true, ""},
		{"array given an object", "a", map[string]any{}, false, "object"},
		{"object", "o", map[string]any{"k": 1.0}, true, ""},
		{"object from Go", "o", map[string]int{"k": 1}, true, ""},
		{"object given an array", "o", []any{}, false, "array"},
		{"null", "s", nil, false, "null"},
		{"unsupported Go value", "o", struct{}{}, false, "struct {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := typedTool.Validate(map[string]any{"req": "r", tt.param: tt.value})
			if tt.ok {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var pe *ParamError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("err = %v, want *ParamError", err)
			}
			want := []InvalidParam{{Name: tt.param, Want: typedTool.Parameters.Properties[tt.param].Type, Got: tt.got}}
			if !reflect.DeepEqual(pe.Invalid, want) {
				t.Errorf("Invalid = %+v, want %+v", pe.Invalid, want)
			}
		})
	}
}

func TestValidateMessage(t *testing.T) {
	cpuTemp := Tool{Name: "cpu_temp", Parameters: Parameters{
		Properties: map[string]Param{"zone": {Type: TypeInteger}, "verbose": {Type: TypeBoolean}},
		Required:   []string{"zone"},
	}}
	noArgs := Tool{Name: "uptime"}
	tests := []struct {
		name string
		tool Tool
		args map[string]any
		want string // "" means valid
	}{
		{"valid", cpuTemp, map[string]any{"zone": 1.0}, ""},
		{"valid with optional", cpuTemp, map[string]any{"zone": 1.0, "verbose": true}, ""},
		{"no arguments for a tool without parameters", noArgs, nil, ""},
		{"missing", cpuTemp, map[string]any{}, `invalid parameters for "cpu_temp": missing "zone". Required: [zone]. Optional: [verbose]`},
		{"nil map is missing", cpuTemp, nil, `invalid parameters for "cpu_temp": missing "zone". Required: [zone]. Optional: [verbose]`},
		{"unknown", cpuTemp, map[string]any{"zone": 0.0, "zonee": 1.0}, `invalid parameters for "cpu_temp": unknown argument "zonee". Required: [zone]. Optional: [verbose]`},
		{"wrong type", cpuTemp, map[string]any{"zone": "0"}, `invalid parameters for "cpu_temp": "zone" must be an integer, got string. Required: [zone]. Optional: [verbose]`},
		{"every problem at once", cpuTemp, map[string]any{"verbose": "yes", "b": 1.0, "a": 1.0},
			`invalid parameters for "cpu_temp": missing "zone"; unknown arguments "a", "b"; "verbose" must be a boolean, got string. Required: [zone]. Optional: [verbose]`},
		{"arguments for a tool without parameters", noArgs, map[string]any{"x": 1.0}, `invalid parameters for "uptime": unknown argument "x". This tool takes no arguments.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tool.Validate(tt.args)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("Validate =\n%v\nwant\n%s", err, tt.want)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	tool := Tool{Name: "x", Parameters: Parameters{Properties: map[string]Param{
		"zone":  {Type: TypeInteger, Default: int64(0)},
		"tags":  {Type: TypeArray, Default: []any{"a"}},
		"label": {Type: TypeString},
	}}}
	args := map[string]any{"zone": 2.0}
	got := tool.WithDefaults(args)
	want := map[string]any{"zone": 2.0, "tags": []any{"a"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithDefaults = %v, want %v", got, want)
	}
	if len(args) != 1 {
		t.Errorf("WithDefaults modified its argument: %v", args)
	}
	got["tags"].([]any)[0] = "changed"
	if tool.Parameters.Properties["tags"].Default.([]any)[0] != "a" {
		t.Error("changing a filled-in default changed the tool")
	}
	if got := tool.WithDefaults(nil); !reflect.DeepEqual(got, map[string]any{"zone": int64(0), "tags": []any{"a"}}) {
		t.Errorf("WithDefaults(nil) = %v", got)
	}
}

func TestAllowed(t *testing.T) {
	shellNet := Tool{Name: "webfetch_sh", Permissions: []string{"shell", "network", "shell"}}
	tests := []struct {
		name    string
		tool    Tool
		granted []string
		ok      bool
		missing []string
	}{
		{"no permissions needed", Tool{Name: "uptime"}, nil, true, nil},
		{"no permissions needed, some granted", Tool{Name: "uptime"}, []string{"shell"}, true, nil},
		{"all granted", shellNet, []string{"network", "shell", "git"}, true, nil},
		{"nothing granted", shellNet, nil, false, []string{"shell", "network"}},
		// The case an any-of check gets wrong: one of two is not enough.
		{"one of two granted", shellNet, []string{"shell"}, false, []string{"network"}},
		{"names are exact", shellNet, []string{"Shell", "network"}, false, []string{"shell"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, missing := Allowed(tt.tool, tt.granted)
			if ok != tt.ok || !reflect.DeepEqual(missing, tt.missing) {
				t.Errorf("Allowed = %v %v, want %v %v", ok, missing, tt.ok, tt.missing)
			}
		})
	}
	// Any-of semantics would let an agent that may only run shell commands
	// use a tool that also reaches the network.
	anyOf := func(tool Tool, granted []string) bool {
		for _, p := range tool.Permissions {
			for _, g := range granted {
				if p == g {
					return true
				}
			}
		}
		return len(tool.Permissions) == 0
	}
	granted := []string{"shell"}
	if ok, _ := Allowed(shellNet, granted); ok || !anyOf(shellNet, granted) {
		t.Errorf("Allowed = %v and any-of = %v for a shell-only agent; want false and true", ok, anyOf(shellNet, granted))
	}
}

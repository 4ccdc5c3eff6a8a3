package skills

import (
	"maps"
	"slices"
)

// Validate checks args against the tool's parameters: every required
// argument present, no undeclared argument, every value of its declared
// type. Numbers may be float64 or json.Number as JSON decoding gives them,
// or Go integers; an integer parameter takes only integral values. A nil
// map is no arguments. The error is a *ParamError listing every problem.
func (t Tool) Validate(args map[string]any) error {
	props := t.Parameters.Properties
	e := &ParamError{Tool: t.Name}
	for _, name := range t.Parameters.Required {
		if _, ok := args[name]; !ok {
			e.Missing = append(e.Missing, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		p, ok := props[name]
		if !ok {
			e.Unknown = append(e.Unknown, name)
			continue
		}
		if got, ok := checkType(p.Type, args[name]); !ok {
			e.Invalid = append(e.Invalid, InvalidParam{Name: name, Want: p.Type, Got: got})
		}
	}
	if len(e.Missing)+len(e.Unknown)+len(e.Invalid) == 0 {
		return nil
	}
	e.Required = slices.Clone(t.Parameters.Required)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if !slices.Contains(e.Required, name) {
			e.Optional = append(e.Optional, name)
		}
	}
	return e
}

// WithDefaults returns a copy of args with the default of every parameter
// that has one and was not given. args itself is not modified.
func (t Tool) WithDefaults(args map[string]any) map[string]any {
	out := make(map[string]any, len(args)+len(t.Parameters.Properties))
	maps.Copy(out, args)
	for name, p := range t.Parameters.Properties {
		if _, given := out[name]; !given && p.Default != nil {
			out[name] = cloneValue(p.Default)
		}
	}
	return out
}

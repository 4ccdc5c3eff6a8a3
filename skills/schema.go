package skills

import "slices"

// Schema returns the tool's parameters as a JSON Schema object, ready to be
// sent to an LLM as a function's "parameters": type "object", "properties"
// (always present, possibly empty), "required" (left out when empty) and
// "additionalProperties": false, since Validate refuses unknown arguments.
// Each property has "type", and "description" and "default" when set. The
// result is a fresh value the caller may modify.
func (t Tool) Schema() map[string]any {
	props := make(map[string]any, len(t.Parameters.Properties))
	for name, p := range t.Parameters.Properties {
		prop := map[string]any{"type": p.Type}
		if p.Description != "" {
			prop["description"] = p.Description
		}
		if p.Default != nil {
			prop["default"] = cloneValue(p.Default)
		}
		props[name] = prop
	}
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(t.Parameters.Required) > 0 {
		s["required"] = slices.Clone(t.Parameters.Required)
	}
	return s
}

// cloneValue deep-copies the arrays and tables of a decoded value, so that
// callers changing a schema or an argument map cannot change the Tool.
func cloneValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	}
	return v
}

package skills

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// encodeArgs renders arguments the two ways a tool binary receives them:
// argv as "--key value" pairs in sorted key order, and stdin as one compact
// JSON object followed by a newline. See the package documentation.
func encodeArgs(args map[string]any) (argv []string, stdin []byte, err error) {
	if args == nil {
		args = map[string]any{}
	}
	stdin, err = compactJSON(args)
	if err != nil {
		return nil, nil, fmt.Errorf("encode arguments as JSON: %w", err)
	}
	argv = make([]string, 0, 2*len(args))
	for _, k := range slices.Sorted(maps.Keys(args)) {
		v, err := argValue(args[k])
		if err != nil {
			return nil, nil, fmt.Errorf("encode argument %q: %w", k, err)
		}
		if strings.ContainsRune(v, 0) {
			return nil, nil, fmt.Errorf("argument %q contains a NUL byte, which cannot be passed on a command line", k)
		}
		argv = append(argv, "--"+k, v)
	}
	return argv, append(stdin, '\n'), nil
}

// argValue renders one argument for argv: strings as they are, booleans as
// true/false, numbers as in JSON, arrays and objects as compact JSON.
func argValue(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case json.Number:
		return x.String(), nil
	}
	b, err := compactJSON(v)
	return string(b), err
}

// compactJSON marshals v without a trailing newline and without escaping
// <, > and &, which tools have no reason to see as \u003c.
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

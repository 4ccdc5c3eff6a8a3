package skills

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
)

// node is one TOML table of a decoded skill.toml and where it is.
type node struct {
	at keyPath
	m  map[string]any
}

// only fails on the first key of n, in sorted order, that is not allowed.
// Key names are compared exactly; a misspelt or miscased key is an error
// rather than silently ignored.
func (n node) only(allowed ...string) *keyErr {
	for _, k := range slices.Sorted(maps.Keys(n.m)) {
		if !slices.Contains(allowed, k) {
			return &keyErr{n.at.child(k), fmt.Sprintf("unknown key %q (allowed: %s)", k, strings.Join(allowed, ", "))}
		}
	}
	return nil
}

// str returns the string at key; absent is "" unless required.
func (n node) str(key string, required bool) (string, *keyErr) {
	v, ok := n.m[key]
	if !ok {
		if required {
			return "", &keyErr{n.at.child(key), "required key is missing"}
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", n.wrongType(key, "a string", v)
	}
	return s, nil
}

// int returns the integer at key; absent is 0.
func (n node) int(key string) (int64, *keyErr) {
	v, ok := n.m[key]
	if !ok {
		return 0, nil
	}
	i, ok := v.(int64)
	if !ok {
		return 0, n.wrongType(key, "an integer", v)
	}
	return i, nil
}

// strs returns the array of strings at key; absent is nil.
func (n node) strs(key string) ([]string, *keyErr) {
	v, ok := n.m[key]
	if !ok {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, n.wrongType(key, "an array of strings", v)
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, &keyErr{n.at.child(key), fmt.Sprintf("element %d must be a string, got %s", i, tomlType(e))}
		}
		out = append(out, s)
	}
	return out, nil
}

// table returns the table at key; absent is an empty table.
func (n node) table(key string) (node, bool, *keyErr) {
	at := n.at.child(key)
	v, ok := n.m[key]
	if !ok {
		return node{at: at, m: map[string]any{}}, false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return node{}, false, n.wrongType(key, "a table", v)
	}
	return node{at: at, m: m}, true, nil
}

// tools returns the [[tools]] array of tables; absent is empty.
func (n node) tools() ([]node, *keyErr) {
	v, ok := n.m["tools"]
	if !ok {
		return nil, nil
	}
	var tables []map[string]any
	switch x := v.(type) {
	case []map[string]any: // [[tools]] sections
		tables = x
	case []any: // tools = [{...}, {...}]
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, &keyErr{toolPath(i), "must be a table, got " + tomlType(e)}
			}
			tables = append(tables, m)
		}
	default:
		return nil, n.wrongType("tools", "an array of tables ([[tools]])", v)
	}
	out := make([]node, len(tables))
	for i, m := range tables {
		out[i] = node{at: toolPath(i), m: m}
	}
	return out, nil
}

func (n node) wrongType(key, want string, got any) *keyErr {
	return &keyErr{n.at.child(key), fmt.Sprintf("must be %s, got %s", want, tomlType(got))}
}

// tomlType names the TOML type of a decoded value.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case []map[string]any:
		return "array of tables"
	case map[string]any:
		return "table"
	case time.Time:
		return "datetime"
	}
	return fmt.Sprintf("%T", v) // toml.LocalDate and friends
}

// buildSkill checks a decoded skill.toml and turns it into a Skill without
// its directory.
func buildSkill(doc map[string]any) (Skill, *keyErr) {
	root := node{at: rootPath, m: doc}
	if ke := root.only("skill", "tools"); ke != nil {
		return Skill{}, ke
	}
	sec, present, ke := root.table("skill")
	if ke != nil {
		return Skill{}, ke
	}
	if !present {
		return Skill{}, &keyErr{rootPath.child("skill"), "required table [skill] is missing"}
	}
	if ke := sec.only("name", "version", "description"); ke != nil {
		return Skill{}, ke
	}
	var s Skill
	if s.Name, ke = sec.str("name", true); ke != nil {
		return Skill{}, ke
	}
	if !validName(s.Name) {
		return Skill{}, &keyErr{sec.at.child("name"), nameRule(s.Name)}
	}
	if s.Version, ke = sec.str("version", false); ke != nil {
		return Skill{}, ke
	}
	if s.Description, ke = sec.str("description", false); ke != nil {
		return Skill{}, ke
	}
	nodes, ke := root.tools()
	if ke != nil {
		return Skill{}, ke
	}
	first := make(map[string]int, len(nodes))
	for i, tn := range nodes {
		t, ke := buildTool(tn)
		if ke != nil {
			return Skill{}, ke
		}
		if j, dup := first[t.Name]; dup {
			return Skill{}, &keyErr{tn.at.child("name"), fmt.Sprintf("duplicate tool name %q (also tools[%d])", t.Name, j)}
		}
		first[t.Name] = i
		s.Tools = append(s.Tools, t)
	}
	return s, nil
}

// buildTool checks one [[tools]] entry.
func buildTool(n node) (Tool, *keyErr) {
	if ke := n.only("name", "binary", "description", "timeout_ms", "permissions", "sandboxing", "output", "parameters", "metadata"); ke != nil {
		return Tool{}, ke
	}
	var (
		t  Tool
		ke *keyErr
	)
	if t.Name, ke = n.str("name", true); ke != nil {
		return Tool{}, ke
	}
	if !validName(t.Name) {
		return Tool{}, &keyErr{n.at.child("name"), nameRule(t.Name)}
	}
	if t.Binary, ke = n.str("binary", true); ke != nil {
		return Tool{}, ke
	}
	if msg := binaryRule(t.Binary); msg != "" {
		return Tool{}, &keyErr{n.at.child("binary"), msg}
	}
	if t.Description, ke = n.str("description", false); ke != nil {
		return Tool{}, ke
	}
	if t.TimeoutMS, ke = n.int("timeout_ms"); ke != nil {
		return Tool{}, ke
	}
	if t.TimeoutMS < 0 {
		return Tool{}, &keyErr{n.at.child("timeout_ms"), fmt.Sprintf("must be >= 0 (0 means the default), got %d", t.TimeoutMS)}
	}
	if t.Permissions, ke = n.strs("permissions"); ke != nil {
		return Tool{}, ke
	}
	for i, p := range t.Permissions {
		if p == "" || strings.ContainsFunc(p, unicode.IsSpace) || strings.ContainsFunc(p, unicode.IsControl) {
			return Tool{}, &keyErr{n.at.child("permissions"), fmt.Sprintf("element %d: %q is not a permission name", i, p)}
		}
	}
	if t.Sandboxing, ke = n.str("sandboxing", false); ke != nil {
		return Tool{}, ke
	}
	switch t.Sandboxing {
	case "":
		t.Sandboxing = SandboxNone
	case SandboxNone, SandboxBubblewrap, SandboxFirejail:
	default:
		return Tool{}, &keyErr{n.at.child("sandboxing"), fmt.Sprintf("unknown value %q (allowed: none, bubblewrap, firejail)", t.Sandboxing)}
	}
	if t.Output, ke = n.str("output", false); ke != nil {
		return Tool{}, ke
	}
	switch t.Output {
	case "":
		t.Output = OutputText
	case OutputText, OutputContent:
	default:
		return Tool{}, &keyErr{n.at.child("output"), fmt.Sprintf("unknown value %q (allowed: text, content)", t.Output)}
	}
	if t.Parameters, ke = buildParameters(n); ke != nil {
		return Tool{}, ke
	}
	if t.Metadata, ke = buildMetadata(n); ke != nil {
		return Tool{}, ke
	}
	return t, nil
}

// buildParameters checks [tools.parameters].
func buildParameters(tool node) (Parameters, *keyErr) {
	pn, _, ke := tool.table("parameters")
	if ke != nil {
		return Parameters{}, ke
	}
	if ke := pn.only("properties", "required"); ke != nil {
		return Parameters{}, ke
	}
	props, _, ke := pn.table("properties")
	if ke != nil {
		return Parameters{}, ke
	}
	ps := Parameters{Properties: make(map[string]Param, len(props.m))}
	for _, name := range slices.Sorted(maps.Keys(props.m)) {
		if !validName(name) {
			return Parameters{}, &keyErr{props.at.child(name), "parameter " + nameRule(name)}
		}
		p, ke := buildParam(props, name)
		if ke != nil {
			return Parameters{}, ke
		}
		ps.Properties[name] = p
	}
	if ps.Required, ke = pn.strs("required"); ke != nil {
		return Parameters{}, ke
	}
	for i, name := range ps.Required {
		if _, ok := ps.Properties[name]; !ok {
			return Parameters{}, &keyErr{pn.at.child("required"), fmt.Sprintf("%q is not defined in parameters.properties", name)}
		}
		if slices.Contains(ps.Required[:i], name) {
			return Parameters{}, &keyErr{pn.at.child("required"), fmt.Sprintf("%q is listed twice", name)}
		}
	}
	return ps, nil
}

// buildParam checks [tools.parameters.properties.<name>].
func buildParam(props node, name string) (Param, *keyErr) {
	n, _, ke := props.table(name)
	if ke != nil {
		return Param{}, ke
	}
	if ke := n.only("type", "description", "default"); ke != nil {
		return Param{}, ke
	}
	var p Param
	if p.Type, ke = n.str("type", true); ke != nil {
		return Param{}, ke
	}
	if !knownType(p.Type) {
		return Param{}, &keyErr{n.at.child("type"), fmt.Sprintf("unknown type %q (allowed: string, integer, number, boolean, array, object)", p.Type)}
	}
	if p.Description, ke = n.str("description", false); ke != nil {
		return Param{}, ke
	}
	if v, ok := n.m["default"]; ok {
		if _, ok := checkType(p.Type, v); !ok {
			return Param{}, &keyErr{n.at.child("default"), fmt.Sprintf("must be %s to match the type, got %s", article(p.Type), tomlType(v))}
		}
		if ke := checkJSONable(n.at.child("default"), v); ke != nil {
			return Param{}, ke
		}
		p.Default = v
	}
	return p, nil
}

// checkJSONable rejects values inside a default that cannot travel as JSON:
// datetimes and non-finite floats nested in arrays or tables.
func checkJSONable(at keyPath, v any) *keyErr {
	switch x := v.(type) {
	case string, int64, bool:
		return nil
	case float64:
		if _, ok := checkFloat(TypeNumber, x); !ok {
			return &keyErr{at, "contains a non-finite number (nan or inf), which JSON cannot carry"}
		}
		return nil
	case []any:
		for _, e := range x {
			if ke := checkJSONable(at, e); ke != nil {
				return ke
			}
		}
		return nil
	case []map[string]any:
		for _, e := range x {
			if ke := checkJSONable(at, e); ke != nil {
				return ke
			}
		}
		return nil
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if ke := checkJSONable(at, x[k]); ke != nil {
				return ke
			}
		}
		return nil
	}
	return &keyErr{at, fmt.Sprintf("contains a %s, which JSON cannot carry", tomlType(v))}
}

// buildMetadata checks [tools.metadata], a table of strings.
func buildMetadata(tool node) (map[string]string, *keyErr) {
	mn, present, ke := tool.table("metadata")
	if ke != nil || !present {
		return nil, ke
	}
	md := make(map[string]string, len(mn.m))
	for _, k := range slices.Sorted(maps.Keys(mn.m)) {
		s, ke := mn.str(k, true)
		if ke != nil {
			return nil, ke
		}
		md[k] = s
	}
	return md, nil
}

// nameRule explains why name is not a valid name.
func nameRule(name string) string {
	return fmt.Sprintf("%q must be 1 to %d characters of a-z, A-Z, 0-9, '_' or '-'", name, maxNameLen)
}

// binaryRule explains why bin is not a usable binary path, or returns "".
// The check is lexical; Execute checks again after resolving symlinks.
func binaryRule(bin string) string {
	switch {
	case bin == "":
		return "must not be empty"
	case filepath.IsAbs(bin) || strings.HasPrefix(bin, "/"):
		return "must be relative to the skill directory"
	case strings.ContainsRune(bin, 0):
		return "must not contain a NUL byte"
	case !filepath.IsLocal(bin):
		return "must stay inside the skill directory (no \"..\")"
	case filepath.Clean(bin) == ".":
		return "must name a file inside the skill directory"
	}
	return ""
}

package skills

import "errors"

// FileName is the name of the file that defines a skill in its directory.
const FileName = "skill.toml"

// Parameter types a tool may declare; they are JSON Schema type names.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeArray   = "array"
	TypeObject  = "object"
)

// Sandboxing values of a tool. They are recorded for the runner that
// enforces them; this package does not.
const (
	SandboxNone       = "none"
	SandboxBubblewrap = "bubblewrap"
	SandboxFirejail   = "firejail"
)

// Output values of a tool.
const (
	// OutputText: stdout is the result, as text.
	OutputText = "text"
	// OutputContent: stdout is a JSON envelope of content blocks,
	// {"content":[{"kind":"text","text":"..."},{"kind":"image",
	// "mime_type":"image/png","data":"<base64>"}]}, so a tool can return
	// images (see ParseContent).
	OutputContent = "content"
)

// maxNameLen is the longest skill, tool or parameter name.
const maxNameLen = 64

// Skill is one skill directory: a named, versioned set of tools.
type Skill struct {
	// Name identifies the skill; it is unique among loaded skills.
	Name string
	// Version is free text, typically semantic ("1.0.0"); may be empty.
	Version string
	// Description says what the skill is for; may be empty.
	Description string
	// Dir is the absolute path of the skill directory.
	Dir string
	// Tools are the skill's tools in file order.
	Tools []Tool
}

// Tool is one callable tool: a binary inside its skill directory and the
// parameters it accepts. A Tool is a value; treat its slices and maps as
// read-only once loaded.
type Tool struct {
	// Name is what the LLM calls; it matches ^[a-zA-Z0-9_-]{1,64}$.
	Name string
	// Binary is the path of the executable relative to Dir; it never
	// leaves Dir.
	Binary string
	// Description tells the LLM what the tool does.
	Description string
	// Sandboxing is one of the Sandbox* values; "none" when not set.
	Sandboxing string
	// TimeoutMS is the tool's own timeout in milliseconds; 0 means the
	// caller's default (ExecOptions.DefaultTimeout).
	TimeoutMS int64
	// Permissions must all be granted for the tool to run.
	Permissions []string
	// Output is how the binary's stdout is read: OutputText (default) or
	// OutputContent.
	Output string
	// Parameters describe the arguments.
	Parameters Parameters
	// Metadata is free-form text for catalogues ("category": "hardware").
	Metadata map[string]string
	// Skill is the name of the skill the tool belongs to.
	Skill string
	// Dir is the absolute path of the skill directory.
	Dir string
}

// Parameters describes a tool's arguments, a JSON object.
type Parameters struct {
	// Properties maps argument names to their description.
	Properties map[string]Param
	// Required lists the arguments that must be given, in file order.
	Required []string
}

// Param describes one argument.
type Param struct {
	// Type is one of the Type* values.
	Type string
	// Description tells the LLM what the argument means.
	Description string
	// Default is used when the argument is not given; nil means none. It
	// holds a value of Type as decoded from TOML: string, int64, float64,
	// bool, []any or map[string]any.
	Default any
}

// CheckName returns an error explaining why s cannot be a tool name, or
// nil when it can: 1 to 64 ASCII letters, digits, '_' or '-'.
func CheckName(s string) error {
	if validName(s) {
		return nil
	}
	return errors.New(nameRule(s))
}

// validName reports whether s is a usable skill, tool or parameter name:
// 1 to 64 ASCII letters, digits, '_' or '-'. Names travel in JSON schemas,
// MQTT payloads and command lines, so nothing needs quoting.
func validName(s string) bool {
	return len(s) > 0 && len(s) <= maxNameLen && nameChars(s)
}

// nameChars reports whether every byte of s is an ASCII letter, digit, '_'
// or '-': the characters of a name (validName) and of a bare TOML key
// (isBareKey).
func nameChars(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// knownType reports whether t is one of the Type* values.
func knownType(t string) bool {
	switch t {
	case TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeArray, TypeObject:
		return true
	}
	return false
}

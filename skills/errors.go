package skills

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors of this package; test for them with errors.Is.
var (
	// ErrInvalidParams is wrapped by every *ParamError.
	ErrInvalidParams = errors.New("invalid parameters")
	// ErrDuplicate means LoadDir found a skill or tool name twice.
	ErrDuplicate = errors.New("duplicate name")
)

// LoadError is a problem with one skill.toml.
type LoadError struct {
	// File is the path of the skill.toml as given to Load.
	File string
	// Line is the 1-based line the problem is on, or 0 when unknown.
	Line int
	// Field is the key at fault, dotted with array indices
	// ("tools[1].binary"); empty for syntax and file errors.
	Field string
	// Msg says what is wrong.
	Msg string
	// Err is the underlying error (a file system or TOML error, or a
	// sentinel of this package), if any.
	Err error
}

// Error returns "file:line: field: msg", leaving out what is unknown.
func (e *LoadError) Error() string {
	parts := make([]string, 0, 3)
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if loc != "" {
		parts = append(parts, loc)
	}
	if e.Field != "" {
		parts = append(parts, e.Field)
	}
	parts = append(parts, e.Msg)
	return strings.Join(parts, ": ")
}

// Unwrap returns the underlying error.
func (e *LoadError) Unwrap() error { return e.Err }

// ParamError says why arguments do not fit a tool. Its message is written
// for an LLM: it names every problem and lists the accepted parameters.
type ParamError struct {
	// Tool is the tool's name.
	Tool string
	// Missing lists required arguments that were not given.
	Missing []string
	// Unknown lists arguments the tool does not declare, sorted.
	Unknown []string
	// Invalid lists arguments of the wrong type, sorted by name.
	Invalid []InvalidParam
	// Required and Optional list the tool's parameters.
	Required, Optional []string
}

// InvalidParam is one argument of the wrong type.
type InvalidParam struct {
	// Name is the argument.
	Name string
	// Want is the declared type ("integer").
	Want string
	// Got describes what was given ("string", "non-integer number 2.5").
	Got string
}

// Error returns e.g. `invalid parameters for "cpu_temp": missing "zone".
// Required: [zone]. Optional: [verbose]`.
func (e *ParamError) Error() string {
	var problems []string
	if len(e.Missing) > 0 {
		problems = append(problems, "missing "+quoteList(e.Missing))
	}
	if len(e.Unknown) > 0 {
		word := "unknown argument "
		if len(e.Unknown) > 1 {
			word = "unknown arguments "
		}
		problems = append(problems, word+quoteList(e.Unknown))
	}
	for _, p := range e.Invalid {
		problems = append(problems, fmt.Sprintf("%q must be %s, got %s", p.Name, article(p.Want), p.Got))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid parameters for %q: %s.", e.Tool, strings.Join(problems, "; "))
	if len(e.Required)+len(e.Optional) == 0 {
		b.WriteString(" This tool takes no arguments.")
		return b.String()
	}
	fmt.Fprintf(&b, " Required: [%s]. Optional: [%s]", strings.Join(e.Required, ", "), strings.Join(e.Optional, ", "))
	return b.String()
}

// Unwrap returns ErrInvalidParams.
func (e *ParamError) Unwrap() error { return ErrInvalidParams }

// quoteList renders names as `"a", "b"`.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// article prefixes a type name with "a" or "an".
func article(typ string) string {
	switch typ {
	case TypeInteger, TypeArray, TypeObject:
		return "an " + typ
	}
	return "a " + typ
}

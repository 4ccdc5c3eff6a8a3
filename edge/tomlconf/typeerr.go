package tomlconf

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
)

// typeErrWords are the decoder's errors about a value, in its own words
// (the line, the key, then what went wrong, for a wrong type in terms of
// Go types), and the TOML words for its names of a destination and of a
// value. Built on first use: package initialisation is every start's.
var typeErrWords = sync.OnceValue(func() *typeErrParse {
	return &typeErrParse{
		valueError: regexp.MustCompile(`(?s)^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`),
		wrongType:  regexp.MustCompile(`^incompatible types: TOML value has type (.+); destination has type (.+)$`),
		notTable:   regexp.MustCompile(`^type mismatch for .+: expected table but found (.+)$`),
		want: map[string]string{"string": "a string", "primitive (string-like)": "a string", "integer": "an integer",
			"float": "a number", "boolean": "true or false", "slice": "an array", "map": "a table"},
		got: map[string]string{"string": "a string", "int64": "an integer", "float64": "a float", "bool": "a boolean",
			"[]any": "an array", "[]map[string]any": "an array of tables", "map[string]any": "a table",
			"time.Time": "a date-time", "toml.LocalDate": "a date", "toml.LocalTime": "a time", "toml.LocalDatetime": "a date-time"},
	}
})

type typeErrParse struct {
	valueError, wrongType, notTable *regexp.Regexp
	want, got                       map[string]string
}

// valueErr is err, an error of the decoder decoding into v, said as the
// other errors of a configuration are: "line 3: node_id: want a string,
// got an integer" rather than "toml: line 3 (last key "node_id"):
// incompatible types: TOML value has type int64; destination has type
// string". Any other error is returned as it is.
func valueErr(err error, v any) error {
	w := typeErrWords()
	m := w.valueError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	msg := m[3]
	if t := w.wrongType.FindStringSubmatch(msg); t != nil {
		want := word(w.want, t[2])
		if fieldType(reflect.TypeOf(v), strings.Split(m[2], ".")) == durationType {
			want = `a duration with its unit, such as "90s"`
		}
		msg = fmt.Sprintf("want %s, got %s", want, word(w.got, t[1]))
	} else if t := w.notTable.FindStringSubmatch(msg); t != nil {
		msg = "want a table, got " + word(w.got, t[1])
	}
	return fmt.Errorf("line %s: %s: %s", m[1], m[2], msg)
}

// word is words[name], or name when it has none.
func word(words map[string]string, name string) string {
	if w, ok := words[name]; ok {
		return w
	}
	return name
}

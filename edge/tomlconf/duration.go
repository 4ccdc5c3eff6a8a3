package tomlconf

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Duration is a time.Duration written as a Go duration string ("90s") in
// TOML: every duration key of agent.toml and evoclaw.toml.
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration like \"90s\": %w", err)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

var durationType = reflect.TypeFor[time.Duration]()

// bareDurations is the error for a number given to a key of src decoded
// into a plain time.Duration (those of packages that know nothing of
// TOML, such as [audit.retention]): the decoder takes it as nanoseconds,
// so `max_age = 3600`, meant as an hour, would delete every record at
// once. Zero, the same in every unit, is accepted. It names every such
// key; nil when there is none.
func bareDurations(src string, md toml.MetaData, v any) error {
	var bad []string
	var raw map[string]any    // src as plain values, decoded only when needed
	seen := map[string]bool{} // an array of tables repeats its keys
	for _, k := range md.Keys() {
		if md.Type(k...) != "Integer" || seen[k.String()] { // a float the decoder refuses itself
			continue
		}
		seen[k.String()] = true
		if t := fieldType(reflect.TypeOf(v), k); t != durationType {
			continue
		}
		if raw == nil {
			if _, err := toml.Decode(src, &raw); err != nil {
				return err
			}
		}
		if !allZero(raw, k) {
			bad = append(bad, k.String())
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if len(bad) > maxNamedKeys {
		bad = append(bad[:maxNamedKeys], fmt.Sprintf("and %d more", len(bad)-maxNamedKeys))
	}
	return fmt.Errorf("%s: a number, which would count nanoseconds; write a duration with its unit, such as \"90s\", \"30m\" or \"24h\"",
		strings.Join(bad, ", "))
}

// fieldType is the type of the field of t that the key k decodes into,
// found as the decoder finds it (case-insensitively, through pointers,
// arrays of tables and maps); nil when there is none.
func fieldType(t reflect.Type, k toml.Key) reflect.Type {
	for _, seg := range k {
		t = deref(t)
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = deref(t.Elem())
		}
		switch {
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct && t != durationType:
			keys := map[string]reflect.Type{}
			fields(t, keys)
			ft, ok := keys[strings.ToLower(seg)]
			if !ok {
				return nil
			}
			t = ft
		default:
			return nil
		}
	}
	return t
}

// allZero reports whether every value the key k names in raw (one per
// table of an array of tables) is the integer zero.
func allZero(raw any, k toml.Key) bool {
	if len(k) == 0 {
		return raw == int64(0)
	}
	switch r := raw.(type) {
	case map[string]any:
		return allZero(r[k[0]], k[1:])
	case []map[string]any:
		for _, e := range r {
			if !allZero(e, k) {
				return false
			}
		}
		return true
	}
	return true // not there: nothing to refuse
}

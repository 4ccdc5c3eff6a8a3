package tomlconf

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// maxListedKeys is how many keys of a table an error lists when no key of
// it is close to the unknown one; a larger table is only pointed at.
const maxListedKeys = 12

// An error names at most maxNamedKeys unknown keys, each cut to
// maxKeyText bytes: a generated file full of them gets a short error,
// found in time linear in the file.
const (
	maxNamedKeys = 20
	maxKeyText   = 200
)

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// unknownKeys is the error for keys a decode into v left unused: each
// named once (not again for the keys inside an unknown table), with the
// key of its table it most likely meant, or the table's keys when it has
// few, so that a typo says what to write instead.
func unknownKeys(und []toml.Key, v any) error {
	seen := map[string]bool{}
	var parts []string
	more := 0
	for _, k := range und {
		if covered(seen, k) {
			continue
		}
		seen[k.String()] = true
		if len(parts) == maxNamedKeys {
			more++
			continue
		}
		name := k.String()
		if len(name) > maxKeyText {
			name = strings.ToValidUTF8(name[:maxKeyText], "") + "…"
		}
		parts = append(parts, name+hint(reflect.TypeOf(v), k))
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return fmt.Errorf("unknown keys: %s; every key is in docs/CONFIG.md", strings.Join(parts, ", "))
}

// covered reports whether a table holding k was already named.
func covered(seen map[string]bool, k toml.Key) bool {
	for i := 1; i < len(k); i++ {
		if seen[k[:i].String()] {
			return true
		}
	}
	return false
}

// hint walks t along k to the table where k's key is missing and says
// which of that table's keys it likely meant; "" when it cannot tell.
func hint(t reflect.Type, k toml.Key) string {
	for _, seg := range k {
		t = deref(t)
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Array { // [[array]] tables: no index in k
			t = deref(t.Elem())
		}
		if t.Kind() == reflect.Map { // seg is the map's own key: any name
			t = t.Elem()
			continue
		}
		if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return ""
		}
		keys := map[string]reflect.Type{}
		fields(t, keys)
		ft, ok := keys[strings.ToLower(seg)]
		if !ok {
			return closest(seg, keys)
		}
		t = ft
	}
	return ""
}

// deref strips pointers.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fields adds the TOML keys of struct t to keys, lowercased, as the
// decoder matches them: the tag's name, else the field's name; embedded
// structs without a tag lend theirs.
func fields(t reflect.Type, keys map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		switch {
		case tag == "-" || (!f.IsExported() && !f.Anonymous):
		case f.Anonymous && tag == "" && deref(f.Type).Kind() == reflect.Struct:
			fields(deref(f.Type), keys)
		case tag != "":
			keys[strings.ToLower(tag)] = f.Type
		default:
			keys[strings.ToLower(f.Name)] = f.Type
		}
	}
}

// closest is " (did you mean K?)" for the key of keys nearest to seg, when
// it is near enough to be a typo, else " (known here: ...)" for a small
// table, else "".
func closest(seg string, keys map[string]reflect.Type) string {
	seg = strings.ToLower(seg)
	best, bestDist := "", 0
	names := make([]string, 0, len(keys))
	for name := range keys {
		names = append(names, name)
		d := distance(seg, name)
		if best == "" || d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	limit := len(seg) / 3 // a typo: one slip in three letters; none in a key of one or two
	if len(seg) >= 3 {
		limit = max(limit, 1)
	}
	if best != "" && bestDist <= limit {
		return " (did you mean " + best + "?)"
	}
	if len(names) == 0 || len(names) > maxListedKeys {
		return ""
	}
	slices.Sort(names)
	return " (known here: " + strings.Join(names, ", ") + ")"
}

// distance is the optimal string alignment distance of a and b in bytes
// (Levenshtein's, with a swap of two neighbours counted as one edit); a key
// of outside input is cut to 64 bytes first, which bounds the work.
func distance(a, b string) int {
	a, b = a[:min(len(a), 64)], b[:min(len(b), 64)]
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		older, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], older[j-2]+1)
			}
		}
		rows = [3][]int{prev, cur, older}
	}
	return rows[1][len(b)]
}

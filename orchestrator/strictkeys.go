package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// checkKeys refuses what encoding/json lets through in body, one JSON
// object that decoded into v (a pointer to a struct) with unknown fields
// refused: a key of that object spelled other than as v's field is
// (encoding/json matches "TEXT" to text and "By" to by), and a key given
// twice in any object (encoding/json keeps the last). Both made a body
// mean one thing to the node and another to whatever read it before (a
// proxy, a log, a person): {"by": "alice", "by": "mallory"} was decided
// by mallory. The error is a *fieldError naming the key.
func checkKeys(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return walkKeys(dec, jsonNames(reflect.TypeOf(v)))
}

// walkKeys reads one value from dec, checking the keys of each object in
// it: none twice, and those of this value, when names is not nil, among
// names (exactly).
func walkKeys(dec *json.Decoder, names map[string]bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := t.(string) // an object's key is a string
			switch {
			case seen[key]:
				return &fieldError{param: key, msg: fmt.Sprintf("%s: given more than once", echo(key))}
			case names != nil && !names[key]:
				return &fieldError{param: key, msg: fmt.Sprintf("unknown field %q (names are lower case, as documented)", echo(key))}
			}
			seen[key] = true
			if err := walkKeys(dec, nil); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := walkKeys(dec, nil); err != nil {
				return err
			}
		}
	default:
		return nil // a scalar
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// jsonNames is the set of JSON keys that encoding/json decodes into the
// struct t (or *t) names, the fields of embedded structs included; nil for
// a type that is not a struct.
func jsonNames(t reflect.Type) map[string]bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	names := map[string]bool{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" && tag == "-":
			continue
		case f.Anonymous && name == "":
			for n := range jsonNames(f.Type) {
				names[n] = true
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		names[name] = true
	}
	return names
}

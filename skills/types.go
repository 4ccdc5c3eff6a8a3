package skills

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"time"
)

// int64 bounds as float64; 2^63 itself is out of range.
const (
	minInt64Float = -(1 << 63)
	maxInt64Float = 1 << 63
)

// checkType reports whether v is a value of the parameter type want. When
// it is not, got describes v for an error message. It accepts what JSON
// decoding produces (float64 or json.Number for numbers, []any, map[string]any),
// what TOML decoding produces (int64) and plain Go values.
func checkType(want string, v any) (got string, ok bool) {
	switch x := v.(type) {
	case nil:
		return "null", false
	case string:
		return "string", want == TypeString
	case bool:
		return "boolean", want == TypeBoolean
	case json.Number:
		return checkJSONNumber(want, x)
	case float64:
		return checkFloat(want, x)
	case float32:
		return checkFloat(want, float64(x))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr:
		return "integer", want == TypeInteger || want == TypeNumber
	case time.Time:
		return "datetime", false
	case []any:
		return "array", want == TypeArray
	case map[string]any:
		return "object", want == TypeObject
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Array:
		return "array", want == TypeArray
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			return "object", want == TypeObject
		}
	}
	// TOML local dates and times land here too.
	return reflect.TypeOf(v).String(), false
}

// checkFloat accepts finite numbers, and integral ones in int64 range for
// integer parameters (JSON has one number type: 3.0 is an integer).
func checkFloat(want string, f float64) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "non-finite number", false
	}
	whole := f == math.Trunc(f)
	integral := whole && f >= minInt64Float && f < maxInt64Float
	switch want {
	case TypeNumber:
		return "number", true
	case TypeInteger:
		switch {
		case integral:
			return "integer", true
		case whole:
			return "integer outside the 64-bit range", false
		}
		return "non-integer number " + strconv.FormatFloat(f, 'g', -1, 64), false
	}
	if integral {
		return "integer", false
	}
	return "number", false
}

// checkJSONNumber is checkFloat for json.Number, which keeps the exact
// digits of large integers.
func checkJSONNumber(want string, n json.Number) (string, bool) {
	if _, err := n.Int64(); err == nil {
		return "integer", want == TypeInteger || want == TypeNumber
	}
	f, err := n.Float64()
	if err != nil {
		return "malformed number", false
	}
	return checkFloat(want, f)
}

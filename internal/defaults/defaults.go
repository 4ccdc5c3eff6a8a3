// Package defaults fills in the fields of options and configuration whose
// zero value means "the default".
package defaults

// number is what Positive fills: counts, sizes, rates and durations.
type number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// Positive sets *v to def when *v is zero or negative: the rule of a
// limit, a size or a duration that has to be positive to mean anything.
func Positive[T number](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

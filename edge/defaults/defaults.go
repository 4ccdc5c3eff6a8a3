// Package defaults fills in the fields of options and configuration whose
// zero value means "the default".
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
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

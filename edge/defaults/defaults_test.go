package defaults

import (
	"testing"
	"time"
)

// Positive replaces zero and negative values and keeps positive ones, for
// every kind of number it takes.
func TestPositive(t *testing.T) {
	for _, tc := range []struct {
		in, def, want time.Duration
	}{
		{0, time.Second, time.Second},
		{-time.Minute, time.Second, time.Second},
		{time.Nanosecond, time.Second, time.Nanosecond},
		{time.Hour, time.Second, time.Hour},
	} {
		v := tc.in
		Positive(&v, tc.def)
		if v != tc.want {
			t.Errorf("Positive(%v, %v) = %v, want %v", tc.in, tc.def, v, tc.want)
		}
	}
	n, f := -1, 0.0
	Positive(&n, 4)
	Positive(&f, 2.5)
	if n != 4 || f != 2.5 {
		t.Fatalf("int %d, float %v; want 4 and 2.5", n, f)
	}
}

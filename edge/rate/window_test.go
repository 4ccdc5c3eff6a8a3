package rate

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	w := NewWindow(2, 10*time.Second)
	steps := []struct {
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{0, true, 0}, {time.Second, true, 0}, {2 * time.Second, false, 0}, {3 * time.Second, false, 0},
		{10 * time.Second, true, 2}, {11 * time.Second, true, 0}, {12 * time.Second, false, 0},
		{25 * time.Second, true, 1},
	}
	for i, s := range steps {
		sup, ok := w.Allow(t0.Add(s.at))
		if ok != s.ok || sup != s.suppressed {
			t.Fatalf("step %d at +%s: (%d, %v), want (%d, %v)", i, s.at, sup, ok, s.suppressed, s.ok)
		}
	}
	if w.Refused() != 3 {
		t.Fatalf("Refused = %d, want 3", w.Refused())
	}
}

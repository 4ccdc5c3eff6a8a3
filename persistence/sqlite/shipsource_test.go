package sqlite

import (
	"context"
	"testing"
)

// MarkShipped only moves the shipped mark forwards; SetShipped sets it
// either way (the shipper's correction when the cold tier holds less).
func TestShippedMarkMoves(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	for _, step := range []struct {
		name string
		do   func() error
		want int64
	}{
		{"mark 5", func() error { return s.MarkShipped(ctx, 5) }, 5},
		{"mark 3: never backwards", func() error { return s.MarkShipped(ctx, 3) }, 5},
		{"set 2: backwards", func() error { return s.SetShipped(ctx, 2) }, 2},
		{"set 9: forwards", func() error { return s.SetShipped(ctx, 9) }, 9},
		{"set 0", func() error { return s.SetShipped(ctx, 0) }, 0},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got, err := s.ShippedSeq(ctx); err != nil || got != step.want {
			t.Fatalf("after %s: shipped mark %d (%v), want %d", step.name, got, err, step.want)
		}
	}
}

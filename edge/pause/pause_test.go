package pause

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// For returns after d when ctx lives on, and with ctx's error as soon as
// ctx ends, however long d is.
func TestFor(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d        time.Duration
		cancelAt time.Duration // 0: never
		want     error
		took     time.Duration
	}{
		{"waits d", 3 * time.Second, 0, nil, 3 * time.Second},
		{"zero returns at once", 0, 0, nil, 0},
		{"ends with ctx", time.Hour, 2 * time.Second, context.Canceled, 2 * time.Second},
		{"ctx already ended", time.Hour, -1, context.Canceled, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				switch {
				case tc.cancelAt < 0:
					cancel()
				case tc.cancelAt > 0:
					time.AfterFunc(tc.cancelAt, cancel)
				}
				start := time.Now()
				err := For(ctx, tc.d)
				if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
					t.Fatalf("For = %v, want %v", err, tc.want)
				}
				if took := time.Since(start); took != tc.took {
					t.Fatalf("For returned after %s, want %s", took, tc.took)
				}
			})
		})
	}
}

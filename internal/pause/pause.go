// Package pause waits for a while unless a context ends first: the delay
// of a retry, the pace of a load generator or a sampler.
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx ends; then it returns ctx.Err().
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

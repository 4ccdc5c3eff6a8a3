// Package pause waits for a while unless a context ends first: the delay
// of a retry, the pace of a load generator or a sampler.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
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

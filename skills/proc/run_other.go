//go:build !unix

package proc

import (
	"context"
	"errors"
	"fmt"
)

// Run is not supported on this platform; it always returns an error
// wrapping errors.ErrUnsupported.
func Run(ctx context.Context, s Spec) (Result, error) {
	return Result{}, fmt.Errorf("run %s: %w", s.Path, errors.ErrUnsupported)
}

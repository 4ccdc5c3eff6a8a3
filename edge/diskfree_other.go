//go:build !linux

package edge

import "errors"

// dataDirFree is not measured here.
func dataDirFree(string) (uint64, error) { return 0, errors.ErrUnsupported }

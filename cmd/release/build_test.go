package main

import (
	"strings"
	"testing"
)

// TestTargetTags: the 32-bit ARM binaries leave the cluster out (it is
// refused there), the 64-bit ones keep it, and go build gets -tags only
// where a target has tags.
func TestTargetTags(t *testing.T) {
	b := builder{}
	for _, tg := range targets {
		args := strings.Join(b.buildArgs(tg, "out"), " ")
		want32 := tg.GOARCH == "arm"
		if got := strings.Contains(args, "-tags nocluster"); got != want32 {
			t.Errorf("%s: build args %q, nocluster %v, want %v", tg.Name, args, got, want32)
		}
		if !want32 && strings.Contains(args, "-tags") {
			t.Errorf("%s: tags in %q", tg.Name, args)
		}
		if !strings.HasSuffix(args, "-o out ./cmd/evoclaw") {
			t.Errorf("%s: build args %q", tg.Name, args)
		}
	}
}

package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/sandbox"
)

// BenchmarkRead reads a 100-line file through the jailed local backend.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(strings.Repeat("a line of text\n", 100)), 0o644); err != nil {
		b.Fatal(err)
	}
	tool, err := builtin.NewRead(builtin.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := tool.Run(context.Background(), map[string]any{"path": "f.txt"}); out.ErrorType() != "" {
			b.Fatal(out.Content)
		}
	}
}

// BenchmarkBash runs `true` through the bash tool, unconfined and inside
// bubblewrap (when installed): the cost of a sandbox per call.
func BenchmarkBash(b *testing.B) {
	for _, kind := range []string{sandbox.None, sandbox.Bubblewrap} {
		b.Run(kind, func(b *testing.B) {
			if _, err := os.Stat("/usr/bin/bwrap"); kind == sandbox.Bubblewrap && err != nil {
				b.Skip("bubblewrap not installed")
			}
			tool, err := builtin.NewBash(builtin.Options{Dir: b.TempDir(), Sandbox: kind})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if out := tool.Run(context.Background(), map[string]any{"command": "true"}); out.ErrorType() != "" {
					b.Fatal(out.Content)
				}
			}
		})
	}
}

package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRun compares Run of a one-line /bin/sh script with the least
// os/exec can do for it (no group kill, no tied thread, no drains of our
// own), so that the cost of Run's own bookkeeping shows as the difference.
func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	sh := filepath.Join(dir, "noop")
	if err := os.WriteFile(sh, []byte("#!/bin/sh\necho ok\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	b.Run("Run", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			res, err := Run(context.Background(), Spec{Path: sh, Stdin: []byte("{}"), Timeout: 5 * time.Second})
			if err != nil || string(res.Stdout) != "ok\n" {
				b.Fatalf("%q %v", res.Stdout, err)
			}
		}
	})
	b.Run("os-exec", func(b *testing.B) {
		for range b.N {
			c := exec.Command(sh)
			c.Stdin = strings.NewReader("{}")
			var out bytes.Buffer
			c.Stdout = &out
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := c.Run(); err != nil || out.String() != "ok\n" {
				b.Fatalf("%q %v", out.String(), err)
			}
		}
	})
}

//go:build linux

package sshops_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func edKey() (ed25519.PublicKey, ed25519.PrivateKey, error) { return ed25519.GenerateKey(rand.Reader) }

// waitGone polls until no process has exactly this command line (NULs
// between arguments), failing the test after 10 s.
func waitGone(t *testing.T, cmdline string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		alive := false
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err != nil || string(b) != cmdline {
				continue
			}
			if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); !strings.Contains(string(stat), ") Z ") {
				alive = true
			}
		}
		if !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %q still running", strings.ReplaceAll(cmdline, "\x00", " "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

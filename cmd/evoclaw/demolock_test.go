package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// TestDemoRefusesABusyDataDir: a demo started on a data directory that a
// running demo or node works in exits 1 before it writes anything there.
// Before, it gave the agents new passwords in the directory's mqtt-users
// and installed the skill, and only then found the audit database in use:
// the running demo's agents were refused by its broker ("not Authorized")
// and it failed too.
func TestDemoRefusesABusyDataDir(t *testing.T) {
	for _, tt := range []struct{ held, by string }{
		{demoLockFile, "another evoclaw demo"},
		{orchestrator.AuditFile, "a running evoclaw node"},
	} {
		t.Run(tt.held, func(t *testing.T) {
			dir := t.TempDir()
			users := filepath.Join(dir, "mqtt-users")
			before := []byte("# the running demo's identities\n")
			if err := os.WriteFile(users, before, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(filepath.Join(dir, tt.held), os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runArgs("demo", "--data-dir", dir)
			if code != 1 || !strings.Contains(errOut, "is in use by "+tt.by) || !strings.Contains(errOut, "--data-dir") {
				t.Fatalf("exit %d, want 1 and the directory in use\n%s", code, errOut)
			}
			if got, err := os.ReadFile(users); err != nil || !bytes.Equal(got, before) {
				t.Errorf("mqtt-users changed: %v\n%s", err, got)
			}
			if _, err := os.Stat(filepath.Join(dir, "skills")); !os.IsNotExist(err) {
				t.Errorf("the skill was installed: %v", err)
			}
		})
	}
}

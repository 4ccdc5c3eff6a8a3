package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequirePeersEnv names the environment variable that, set to 1, makes a
// missing peer fail tests instead of skipping them.
const RequirePeersEnv = "EVOCLAW_REQUIRE_PEERS"

// sbinDirs are searched after PATH: Debian puts daemons in /usr/sbin,
// often missing from a non-root PATH.
var sbinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/sbin"}

// Lookup returns the path of program, found on PATH or in the sbin
// directories, and whether it was found.
func Lookup(program string) (string, bool) {
	if p, err := exec.LookPath(program); err == nil {
		return p, true
	}
	for _, d := range sbinDirs {
		if p := filepath.Join(d, program); IsExecutable(p) {
			return p, true
		}
	}
	return "", false
}

// IsExecutable reports whether path is a regular file with an execute bit.
func IsExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Find returns the path of program, or skips the test (fails it when
// peers are required) saying which Debian package to install.
func Find(t testing.TB, program, debPackage string) string {
	t.Helper()
	p, ok := Lookup(program)
	if !ok {
		Missing(t, t.Skipf, program, "apt-get install "+debPackage)
	}
	return p
}

// Missing reports that program is not installed: it fails the test when
// peers are required, else reports through skipOrLog (t.Skipf, or t.Logf
// where other tests should go on) that the tests against program did NOT
// run. install says how to get it: "apt-get install mosquitto".
func Missing(t testing.TB, skipOrLog func(format string, args ...any), program, install string) {
	t.Helper()
	if os.Getenv(RequirePeersEnv) == "1" {
		t.Fatalf("%s not installed but %s=1: install it (%s)", program, RequirePeersEnv, install)
	}
	skipOrLog("SKIP: %s not installed; install it (%s) or set %s=1 to make this a failure; tests against %s did NOT run",
		program, install, RequirePeersEnv, program)
}

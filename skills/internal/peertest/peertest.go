// Package peertest finds the outside programs tests of package skills and
// its subpackages run against (bwrap, firejail, sshd), following the
// project's rule for peers: a missing peer skips the test loudly, or fails
// it when EVOCLAW_REQUIRE_PEERS=1 (as CI sets).
package peertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequirePeersEnv is the variable that turns a missing peer into a
// failure; it is the one edge/mqtttest reads.
const RequirePeersEnv = "EVOCLAW_REQUIRE_PEERS"

// sbinDirs are searched after PATH: Debian puts daemons in /usr/sbin,
// often missing from a non-root PATH.
var sbinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/sbin"}

// Find returns the path of program, or skips the test (fails it when
// peers are required) saying which Debian package to install.
func Find(t testing.TB, program, debPackage string) string {
	t.Helper()
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	for _, d := range sbinDirs {
		p := filepath.Join(d, program)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if os.Getenv(RequirePeersEnv) == "1" {
		t.Fatalf("%s not installed but %s=1: install it (apt-get install %s)", program, RequirePeersEnv, debPackage)
	}
	t.Skipf("SKIP: %s not installed; install it (apt-get install %s) or set %s=1 to make this a failure; tests against %s did NOT run",
		program, debPackage, RequirePeersEnv, program)
	return ""
}

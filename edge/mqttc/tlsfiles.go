package mqttc

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
)

// TLSFiles names the files of a client's TLS settings, as they appear in
// agent.toml's [mqtt] and evoclaw.toml's [broker] sections. The zero value
// means: verify the broker against the system's roots, no client
// certificate.
type TLSFiles struct {
	// CAFile holds the PEM certificates of the CA that signed the broker's
	// certificate (a private CA, typically). Empty means the system roots.
	CAFile string `toml:"ca_file"`
	// CertFile and KeyFile hold a PEM client certificate and its key, for a
	// broker that authenticates clients by certificate (the common name is
	// the identity). Both or neither.
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
	// InsecureSkipVerify accepts any broker certificate: anyone on the path
	// can then read and forge every message. Connect logs a warning every
	// time it is used.
	InsecureSkipVerify bool `toml:"insecure_skip_verify"`
}

// IsZero reports whether f sets nothing.
func (f TLSFiles) IsZero() bool { return f == TLSFiles{} }

// Resolve returns f with relative paths made relative to dir (the directory
// of the configuration file that named them).
func (f TLSFiles) Resolve(dir string) TLSFiles {
	f.CAFile, f.CertFile, f.KeyFile = tomlconf.Resolve(dir, f.CAFile), tomlconf.Resolve(dir, f.CertFile), tomlconf.Resolve(dir, f.KeyFile)
	return f
}

// Config loads the files into a tls.Config for Options.TLSConfig. It
// returns nil, nil for the zero value, which Connect treats as "system
// roots, full verification" for a tls:// URL.
func (f TLSFiles) Config() (*tls.Config, error) {
	if f.IsZero() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.InsecureSkipVerify}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: ca_file: %w", ErrInvalidOptions, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: ca_file %s: no PEM certificate found", ErrInvalidOptions, f.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case f.CertFile != "" && f.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: cert_file and key_file: %w", ErrInvalidOptions, err)
		}
		c.Certificates = []tls.Certificate{cert}
	case f.CertFile != "" || f.KeyFile != "":
		return nil, fmt.Errorf("%w: cert_file and key_file go together; only one is set", ErrInvalidOptions)
	}
	return c, nil
}

package broker

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync/atomic"
)

// TLSOptions configures the broker's TLS listener. The zero value means no
// TLS listener.
type TLSOptions struct {
	// Listen is the host:port of the TLS listener, e.g. "0.0.0.0:8883".
	// Empty means no TLS listener. Port 0 picks a free port (Broker.TLSAddr).
	Listen string
	// CertFile and KeyFile hold the server's PEM certificate (chain) and
	// private key. Both are required with Listen, and are re-read when they
	// change (see Options.ReloadInterval).
	CertFile, KeyFile string
	// ClientCAFile, when set, holds the PEM certificates of the CA that signs
	// client certificates. A client presenting a certificate it signed is
	// authenticated as the identity named by the certificate's common name
	// without a password. The identity must be in the users file: an
	// in-memory one (Options.Users) authenticates by password only. Read
	// once at start.
	ClientCAFile string
	// RequireClientCert refuses TLS clients without a valid client
	// certificate. It needs ClientCAFile.
	RequireClientCert bool
}

// serverTLS builds the listener's tls.Config; the certificate is read from
// cert on every handshake so that a reload takes effect for new connections.
func (o TLSOptions) serverTLS(cert *atomic.Pointer[tls.Certificate]) (*tls.Config, error) {
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return cert.Load(), nil
		},
	}
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("read client CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA file %s: no PEM certificate found", o.ClientCAFile)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
		if o.RequireClientCert {
			c.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return c, nil
}

// loadCert reads the server's key pair.
func (o TLSOptions) loadCert() (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load tls certificate %s and key %s: %w", o.CertFile, o.KeyFile, err)
	}
	return &c, nil
}

// validate checks the options when a TLS listener is asked for.
func (o TLSOptions) validate() error {
	if o.Listen == "" {
		if o.CertFile != "" || o.KeyFile != "" || o.ClientCAFile != "" || o.RequireClientCert {
			return fmt.Errorf("%w: tls files given without a tls listen address", ErrInvalidOptions)
		}
		return nil
	}
	if err := checkListen(o.Listen); err != nil {
		return err
	}
	if o.CertFile == "" || o.KeyFile == "" {
		return fmt.Errorf("%w: tls listener %s needs a certificate file and a key file", ErrInvalidOptions, o.Listen)
	}
	if o.RequireClientCert && o.ClientCAFile == "" {
		return fmt.Errorf("%w: requiring client certificates needs a client CA file", ErrInvalidOptions)
	}
	return nil
}

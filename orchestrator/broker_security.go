package orchestrator

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// BrokerSecurity is the embedded broker's access control and TLS listener,
// part of [broker] in evoclaw.toml. The zero value: identities from
// {data_dir}/mqtt-users, no anonymous clients, no TLS listener.
type BrokerSecurity struct {
	// AllowAnonymous lets clients connect without credentials, with full
	// access. Only for loopback listeners; the demo of old, tests.
	AllowAnonymous bool `toml:"allow_anonymous"`
	// UsersFile is the identity file managed by `evoclaw agents`. Empty
	// means {data_dir}/mqtt-users.
	UsersFile string `toml:"users_file"`
	// TLSListen is the host:port of a TLS listener ("0.0.0.0:8883"). Empty:
	// none. It needs TLSCertFile and TLSKeyFile.
	TLSListen   string `toml:"tls_listen"`
	TLSCertFile string `toml:"tls_cert_file"`
	TLSKeyFile  string `toml:"tls_key_file"`
	// TLSClientCAFile enables client certificates signed by this CA; the
	// certificate's common name is the identity (it must be in the users
	// file). TLSRequireClientCert refuses TLS clients without one.
	TLSClientCAFile      string `toml:"tls_client_ca_file"`
	TLSRequireClientCert bool   `toml:"tls_require_client_cert"`
	// MaxPacketBytes is the largest MQTT packet a client may send; a larger
	// one ends its connection, logged. Zero means 1 MiB.
	MaxPacketBytes int `toml:"max_packet_bytes"`
}

// resolve makes relative paths relative to base.
func (s BrokerSecurity) resolve(base string) BrokerSecurity {
	abs := func(p string) string { return tomlconf.Resolve(base, p) }
	s.UsersFile, s.TLSCertFile, s.TLSKeyFile, s.TLSClientCAFile = abs(s.UsersFile), abs(s.TLSCertFile), abs(s.TLSKeyFile), abs(s.TLSClientCAFile)
	return s
}

// validateSecurity checks that embedded-broker settings are not given for
// an external broker, where they would silently do nothing.
func (b BrokerConf) validateSecurity() []error {
	switch {
	case b.URL != "" && b.BrokerSecurity != (BrokerSecurity{}):
		return []error{fmt.Errorf("broker: allow_anonymous, users_file, max_packet_bytes and tls_* configure the embedded broker, but url %q selects an external one", b.URL)}
	case b.URL == "" && !b.TLSFiles.IsZero():
		return []error{fmt.Errorf("broker: ca_file, cert_file, key_file and insecure_skip_verify are for an external tls:// broker (url); the embedded broker's own files are tls_cert_file and tls_key_file")}
	case b.URL == "" && (b.Username != "" || b.PasswordEnv != ""):
		return []error{fmt.Errorf("broker: username and password_env are for an external broker (url); the node's session on the embedded broker needs none")}
	}
	return nil
}

// UsersFilePath is where the embedded broker reads its identities.
func (c Config) UsersFilePath() string {
	if c.Broker.UsersFile != "" {
		return c.Broker.UsersFile
	}
	return filepath.Join(c.DataDir, broker.UsersFileName)
}

// embeddedBroker returns the embedded broker's options and the credential
// of the node's own session: an orchestrator identity that lives in memory
// for this process only. Its name contains a colon, which no identity in the
// users file can have.
func (c Config) embeddedBroker(log *slog.Logger) (broker.Options, broker.User, error) {
	pw, err := broker.NewPassword()
	if err != nil {
		return broker.Options{}, broker.User{}, err
	}
	self := broker.User{Name: "node:" + c.NodeID, Role: broker.RoleOrchestrator, Password: pw}
	s := c.Broker.BrokerSecurity
	return broker.Options{
		Listen:         c.Broker.Listen,
		Users:          []broker.User{self},
		UsersFile:      c.UsersFilePath(),
		AllowAnonymous: s.AllowAnonymous,
		MaxPacketBytes: s.MaxPacketBytes,
		// The node owns its process: `kill -HUP` reloads rather than kills.
		ReloadOnSIGHUP: true,
		TLS: broker.TLSOptions{Listen: s.TLSListen, CertFile: s.TLSCertFile, KeyFile: s.TLSKeyFile,
			ClientCAFile: s.TLSClientCAFile, RequireClientCert: s.TLSRequireClientCert},
		Logger: log,
	}, self, nil
}

// clientTLS is the node's TLS client configuration for an external broker.
func (c Config) clientTLS() (*tls.Config, error) {
	t, err := c.Broker.TLSFiles.Config()
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	return t, nil
}

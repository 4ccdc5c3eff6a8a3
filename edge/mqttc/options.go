package mqttc

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by Connect to zero-valued Options fields.
const (
	// DefaultKeepAlive is the MQTT keepalive interval.
	DefaultKeepAlive = 30 * time.Second
	// DefaultConnectTimeout bounds one connection attempt (dial and handshake)
	// and each wait for a broker acknowledgement that has no context.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxReconnectInterval caps the wait between reconnection attempts.
	DefaultMaxReconnectInterval = 30 * time.Second
	// DefaultReconnectJitter bounds the random delay before each attempt to
	// reconnect after a lost connection.
	DefaultReconnectJitter = 2 * time.Second
)

const (
	// closeQuiesce is how long Close lets paho flush DISCONNECT and tear down.
	closeQuiesce = 250 * time.Millisecond
	// pingTimeout is how long paho waits for PINGRESP before it declares the
	// connection lost.
	pingTimeout = 10 * time.Second
)

// Message is one MQTT application message.
type Message struct {
	// Topic is the topic name; it must not contain wildcards when publishing.
	Topic string
	// Payload is the message body.
	Payload []byte
	// QoS is the quality of service, 0, 1 or 2. On receipt it is the QoS the
	// message was delivered with.
	QoS byte
	// Retained asks the broker to keep the message for future subscribers. On
	// receipt it is true only for a retained message delivered because a
	// subscription was just made, not for a live one.
	Retained bool
}

// Options configures a Client. Only BrokerURL is required.
type Options struct {
	// BrokerURL is the broker address: tcp://host:port or mqtt://host:port for
	// plain TCP, tls://host:port or ssl://host:port for TLS. A missing port
	// means 1883, or 8883 for TLS.
	BrokerURL string
	// ClientID identifies the session. Empty lets the broker assign one. Two
	// clients with the same id take the connection from each other.
	ClientID string
	// Username and Password authenticate the client; empty means anonymous.
	Username, Password string
	// TLSConfig customises TLS for tls:// and ssl:// URLs. Nil means the
	// system roots with full verification. It is an error to set it for a
	// plain-TCP URL.
	TLSConfig *tls.Config
	// KeepAlive is the MQTT keepalive interval. Zero means DefaultKeepAlive.
	// It also bounds how fast the broker notices a dead client (1.5 times it).
	KeepAlive time.Duration
	// ConnectTimeout bounds one connection attempt and each acknowledgement
	// wait without a context. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxReconnectInterval caps every wait between connection attempts,
	// which double up to it after the first two minutes of an outage, or
	// at once after the broker refused the client or dropped a connection
	// made less than 10 s before. Zero means DefaultMaxReconnectInterval.
	MaxReconnectInterval time.Duration
	// ReconnectJitter bounds a random delay (uniform from zero) before the
	// first attempt to reconnect after a lost connection (and after the
	// first failed attempt to connect), so that a fleet whose connections
	// dropped at once does not come back in one burst: each agent's first
	// reconnect costs the broker a password check. Later attempts come
	// about every second, half of it more or less at random, for the first
	// two minutes of an outage, then further apart (backoff.go). Zero means
	// DefaultReconnectJitter; negative means none, and no random part in
	// the later waits either. It never exceeds MaxReconnectInterval.
	ReconnectJitter time.Duration
	// Will is the last will the broker publishes if the connection is lost
	// without a clean Close. Nil means none.
	Will *Message
	// OnConnect, if set, runs after every successful connection, the first
	// included, once subscriptions have been restored; use it to publish
	// retained presence. See the package documentation for its goroutine.
	OnConnect func(*Client)
	// Logger receives connection events. Nil discards them.
	Logger *slog.Logger
	// MaxPacketBytes bounds the remaining length of a packet the broker
	// sends; a larger one closes the connection before it is read
	// (ErrPacketTooLarge, logged as a lost connection) and the client
	// reconnects. Zero means no bound but MQTT's own (256 MiB), which paho
	// allocates whole.
	MaxPacketBytes int
}

// withDefaults fills zero fields, validates the rest and returns the broker
// URL normalised for paho.
func (o Options) withDefaults() (Options, *url.URL, error) {
	o.KeepAlive = cmp.Or(o.KeepAlive, DefaultKeepAlive)
	o.ConnectTimeout = cmp.Or(o.ConnectTimeout, DefaultConnectTimeout)
	o.MaxReconnectInterval = cmp.Or(o.MaxReconnectInterval, DefaultMaxReconnectInterval)
	switch {
	case o.ReconnectJitter == 0:
		o.ReconnectJitter = DefaultReconnectJitter
	case o.ReconnectJitter < 0:
		o.ReconnectJitter = 0
	}
	o.ReconnectJitter = min(o.ReconnectJitter, o.MaxReconnectInterval)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	switch {
	case o.KeepAlive < time.Second:
		return o, nil, fmt.Errorf("%w: keepalive %v is under one second", ErrInvalidOptions, o.KeepAlive)
	case o.ConnectTimeout < 0:
		return o, nil, fmt.Errorf("%w: negative connect timeout", ErrInvalidOptions)
	case o.MaxReconnectInterval < 0:
		return o, nil, fmt.Errorf("%w: negative max reconnect interval", ErrInvalidOptions)
	case o.MaxPacketBytes < 0:
		return o, nil, fmt.Errorf("%w: negative max packet bytes", ErrInvalidOptions)
	}
	if o.Will != nil {
		if err := validatePublish(*o.Will); err != nil {
			return o, nil, fmt.Errorf("%w: will: %w", ErrInvalidOptions, err)
		}
	}
	u, err := parseBrokerURL(o.BrokerURL)
	if err != nil {
		return o, nil, err
	}
	secure := u.Scheme == "tls" || u.Scheme == "ssl"
	if o.TLSConfig != nil && !secure {
		return o, nil, fmt.Errorf("%w: tls config given for unencrypted broker url %s", ErrInvalidOptions, u.Redacted())
	}
	if secure {
		o.TLSConfig = tlsConfigFor(o.TLSConfig, u.Hostname())
	}
	return o, u, nil
}

// parseBrokerURL checks the scheme and fills in the default port.
func parseBrokerURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("%w: empty broker url", ErrInvalidOptions)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: broker url: %w", ErrInvalidOptions, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	port := ""
	switch u.Scheme {
	case "tcp", "mqtt":
		port = "1883"
	case "tls", "ssl":
		port = "8883"
	default:
		return nil, fmt.Errorf("%w: broker url %s: scheme must be tcp, mqtt, tls or ssl", ErrInvalidOptions, u.Redacted())
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: broker url %s has no host", ErrInvalidOptions, u.Redacted())
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), port)
	}
	return u, nil
}

// tlsConfigFor returns a copy of base (or a fresh config) that verifies the
// broker's certificate for host. paho's proxy path hands the config straight
// to tls.Client, which needs ServerName to verify.
func tlsConfigFor(base *tls.Config, host string) *tls.Config {
	var c *tls.Config
	if base != nil {
		c = base.Clone()
	} else {
		c = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.ServerName == "" {
		c.ServerName = host
	}
	return c
}

// validatePublish checks what the broker would otherwise reject by closing
// the connection.
func validatePublish(m Message) error {
	switch {
	case m.Topic == "":
		return fmt.Errorf("%w: empty topic", ErrInvalidMessage)
	case strings.ContainsAny(m.Topic, "+#"):
		return fmt.Errorf("%w: topic %q contains a wildcard", ErrInvalidMessage, m.Topic)
	case m.QoS > 2:
		return fmt.Errorf("%w: qos %d", ErrInvalidMessage, m.QoS)
	}
	return nil
}

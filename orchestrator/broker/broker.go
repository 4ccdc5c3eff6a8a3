package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// Defaults applied by Start to zero-valued Options fields.
const (
	// DefaultListen is the address the broker listens on when Options.Listen is empty.
	DefaultListen = "127.0.0.1:1883"
	// DefaultMaxPacketBytes bounds the size of one MQTT packet (1 MiB).
	DefaultMaxPacketBytes = 1 << 20
)

// Errors returned by Start.
var (
	// ErrExposedAnonymous is returned when the broker would accept anonymous
	// clients on a non-loopback address.
	ErrExposedAnonymous = errors.New("anonymous mqtt broker exposed to the network")
	// ErrInvalidOptions is returned for malformed Options.
	ErrInvalidOptions = errors.New("invalid broker options")
)

// Options configures the embedded broker. The zero value listens on
// DefaultListen and allows anonymous clients on loopback only.
type Options struct {
	// Listen is the TCP host:port to listen on. Empty means DefaultListen.
	// Port 0 picks a free port; see Broker.Addr for the one chosen. An empty
	// host, "0.0.0.0" and "::" listen on every interface.
	Listen string
	// Users maps username to password. When non-empty every client must
	// authenticate with one of these pairs; anonymous clients are refused.
	// When empty, clients connect without credentials, which Start allows on
	// loopback addresses only.
	Users map[string]string
	// AllowAnonymousNonLoopback lets Start accept anonymous clients on a
	// non-loopback address. Anyone who can reach the port can then command
	// every edge agent; use it only on an isolated network.
	AllowAnonymousNonLoopback bool
	// MaxPacketBytes is the largest MQTT packet accepted from a client, in
	// bytes. Zero means DefaultMaxPacketBytes.
	MaxPacketBytes int
	// Logger receives the broker's logs. Nil discards them. The broker's own
	// informational chatter is logged at debug level.
	Logger *slog.Logger
}

// Broker is a running embedded MQTT broker.
type Broker struct {
	server *mqtt.Server
	ln     *listener
	log    *slog.Logger

	closeOnce sync.Once
	closeErr  error // set once by closeOnce
}

// Start validates o, binds the listener and starts serving. It returns once
// clients can connect.
func Start(o Options) (*Broker, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("start mqtt broker: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(logKeyComponent, "mqtt-broker")

	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = uint32(o.MaxPacketBytes)
	// mochi deletes every retained message 24 h after it was published unless
	// this is zero. Agents publish retained capabilities and status once per
	// connection, so a long-lived agent would silently vanish from late
	// subscribers after a day.
	caps.MaximumMessageExpiryInterval = 0
	// Our clients use clean sessions. mochi keeps the session of a client
	// that asks for a persistent one forever by default; cap it.
	caps.MaximumSessionExpiryInterval = maxSessionExpirySeconds

	server := mqtt.New(&mqtt.Options{
		Capabilities: caps,
		Logger:       slog.New(demoteInfo{log.Handler()}),
	})
	hook := &authHook{users: newCredentials(o.Users), log: log}
	if err := server.AddHook(hook, nil); err != nil {
		return nil, fmt.Errorf("start mqtt broker: add auth hook: %w", err)
	}

	nl, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("start mqtt broker: listen on %s: %w", o.Listen, err)
	}
	ln := newListener(listenerID, nl, log)
	if err := server.AddListener(ln); err != nil {
		_ = nl.Close()
		return nil, fmt.Errorf("start mqtt broker: add listener: %w", err)
	}
	if err := server.Serve(); err != nil {
		_ = server.Close()
		return nil, fmt.Errorf("start mqtt broker: serve: %w", err)
	}

	b := &Broker{server: server, ln: ln, log: log}
	log.Info("mqtt broker listening", logKeyAddr, b.Addr(), logKeyAuth, len(o.Users) > 0)
	if len(o.Users) == 0 && !isLoopbackHost(hostOf(o.Listen)) {
		log.Warn("mqtt broker accepts anonymous clients on a non-loopback address; anyone who reaches it can run commands on edge agents",
			logKeyAddr, b.Addr())
	}
	return b, nil
}

// Addr returns the host:port the broker is bound to, with the real port when
// Options.Listen asked for port 0.
func (b *Broker) Addr() string { return b.ln.Address() }

// URL returns the address as a client broker URL, tcp://host:port.
func (b *Broker) URL() string { return "tcp://" + b.Addr() }

// Close stops accepting connections, closes every client connection and
// waits until each session has ended. The clients did not send DISCONNECT,
// so the broker publishes their wills while it shuts down: a client whose
// connection is closed later may still receive the wills of those before it,
// which says truthfully that they went offline. Retained messages are not
// kept. Close is idempotent and safe for concurrent use.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		// mochi's Close panics on a second call (it closes a channel).
		if err := b.server.Close(); err != nil {
			b.closeErr = fmt.Errorf("close mqtt broker: %w", err)
		}
		b.log.Info("mqtt broker stopped", logKeyAddr, b.Addr())
	})
	return b.closeErr
}

const (
	listenerID = "evoclaw-tcp"
	// maxSessionExpirySeconds caps how long the broker keeps the session of a
	// disconnected client that asked for a persistent one.
	maxSessionExpirySeconds = 60 * 60
)

// withDefaults fills zero fields and validates the rest.
func (o Options) withDefaults() (Options, error) {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	host, port, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return o, fmt.Errorf("%w: listen address %q: %w", ErrInvalidOptions, o.Listen, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > math.MaxUint16 {
		return o, fmt.Errorf("%w: listen address %q: port must be a number from 0 to 65535", ErrInvalidOptions, o.Listen)
	}
	for user := range o.Users {
		if user == "" {
			return o, fmt.Errorf("%w: broker user with an empty name", ErrInvalidOptions)
		}
	}
	switch {
	case o.MaxPacketBytes == 0:
		o.MaxPacketBytes = DefaultMaxPacketBytes
	case o.MaxPacketBytes < 0 || int64(o.MaxPacketBytes) > math.MaxUint32:
		return o, fmt.Errorf("%w: max packet bytes %d out of range", ErrInvalidOptions, o.MaxPacketBytes)
	}
	if len(o.Users) == 0 && !o.AllowAnonymousNonLoopback && !isLoopbackHost(host) {
		return o, &exposedError{listen: o.Listen}
	}
	return o, nil
}

// hostOf returns the host part of a host:port, or "" when it has none.
func hostOf(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return ""
	}
	return host
}

// isLoopbackHost reports whether host names only loopback interfaces. Only
// literal addresses and "localhost" count: other names could resolve to
// anything, and "" or an unspecified address means every interface.
func isLoopbackHost(host string) bool {
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// exposedError explains why Start refused an anonymous non-loopback listener
// and what to do about it. It matches ErrExposedAnonymous.
type exposedError struct{ listen string }

func (e *exposedError) Error() string {
	return "refusing to listen on " + e.listen + " without credentials: anyone on the network could run commands on your edge agents; configure broker users or listen on 127.0.0.1"
}

func (e *exposedError) Unwrap() error { return ErrExposedAnonymous }

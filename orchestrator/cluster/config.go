package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// Defaults of Config.
const (
	DefaultName = "evoclaw"
	DefaultHost = "127.0.0.1"
	DefaultPort = 8091
	// DefaultDialTimeout bounds the first contact with etcd at start.
	DefaultDialTimeout = 5 * time.Second
)

// MinHistoryMaxAge is the least Config.HistoryMaxAge: a conversation
// that a node still holds (dormant, or in a long chat) is never that idle.
const MinHistoryMaxAge = time.Hour

// maxEndpoints bounds the etcd endpoints a config may list.
const maxEndpoints = 16

// Config is the [cluster] section of evoclaw.toml. The zero value is a
// node on its own: no cluster, nothing started, nothing dialed.
type Config struct {
	// Etcd lists the etcd endpoints that hold the cluster's membership:
	// "https://host:2379", reached with [cluster.tls] (the node presents
	// its certificate, and accepts etcd's when the cluster's CA signed
	// it), or in plain HTTP ("http://host:2379" or "host:2379") on
	// loopback only (ErrEtcdExposed). Empty means clustering is off.
	Etcd []string `toml:"etcd"`
	// Name is the cluster's name: nodes with the same name (and etcd)
	// form one cluster. Default DefaultName.
	Name string `toml:"name"`
	// Host and Port are where this node listens for the other nodes'
	// actor messages (protoactor remote over gRPC). Default
	// DefaultHost:DefaultPort. A host that is not loopback needs TLS.
	Host string `toml:"host"`
	Port int    `toml:"port"`
	// Advertise is the host:port the other nodes dial to reach this one,
	// when it differs from Host:Port (a node listening on 0.0.0.0).
	Advertise string `toml:"advertise"`
	// StateURL is the libSQL server (sqld) holding what the nodes share:
	// conversation histories, so a conversation continues on another
	// node when its owner dies. Its token, if any, is in the
	// EVOCLAW_CLUSTER_STATE_TOKEN environment variable.
	StateURL string `toml:"state_url"`
	// HistoryMaxAge, with StateURL, deletes from the shared histories
	// every conversation whose newest message is older than this (every
	// node checks once an hour). Zero keeps them, as the audit database
	// keeps its messages without [audit.retention] max_age.
	HistoryMaxAge time.Duration `toml:"history_max_age"`
	// TLS is the mutual TLS of the actor port ([cluster.tls]). The zero
	// value means none, which only a loopback Host may have: a message
	// to the port can run a chat with the node's tools.
	TLS TLSFiles `toml:"tls"`
}

// StateTokenEnv names the environment variable holding the auth token
// (a JWT) of StateURL; never read from a file.
const StateTokenEnv = "EVOCLAW_CLUSTER_STATE_TOKEN"

// ErrNot64Bit refuses a cluster on a 32-bit build. protoactor-go's
// process registry panics on half of all actor ids there (int(murmur3(id))
// is negative; upstream issue 755). Every id evoclaw chooses is salted
// around it (actors/pidname.go), but the cluster names its own actors
// (activators, partitions, grains), so a cluster member on armv6 or armv7
// dies on its first few spawns. An edge agent and a single orchestrator are
// not affected.
var ErrNot64Bit = errors.New("cluster: clustering needs a 64-bit build (arm64, amd64): on 32-bit ARM protoactor-go's cluster names actors its registry cannot hold (upstream issue 755); run the clustered orchestrators on 64-bit boards, edge agents and a single node run anywhere")

// wordBits is the width of int; a variable so the test of the refusal runs
// on 64-bit machines too.
var wordBits = strconv.IntSize

// Enabled reports whether the node joins a cluster.
func (c Config) Enabled() bool { return len(c.Etcd) > 0 }

// Validate fills the defaults of an enabled config and checks it; a
// disabled one must set no other key, so a typo does not silently leave
// a node alone. A Host beyond loopback without TLS is refused
// (ErrExposed), and so is an etcd endpoint beyond loopback in plain HTTP
// (ErrEtcdExposed) or an https one without [cluster.tls]. The TLS files
// are read by Start, not here.
func (c *Config) Validate() error {
	if !c.Enabled() {
		if c.Name != "" || c.Host != "" || c.Port != 0 || c.Advertise != "" || c.StateURL != "" || c.HistoryMaxAge != 0 || !c.TLS.IsZero() {
			return errors.New("cluster: keys set but cluster.etcd is empty (clustering is off without etcd endpoints)")
		}
		return nil
	}
	if wordBits == 32 {
		return ErrNot64Bit
	}
	var errs []error
	if len(c.Etcd) > maxEndpoints {
		errs = append(errs, fmt.Errorf("cluster.etcd: %d endpoints, at most %d", len(c.Etcd), maxEndpoints))
	}
	for i, e := range c.Etcd {
		scheme, host, err := parseEndpoint(e)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster.etcd[%d]: %w", i, err))
		case scheme == "http" && !loopbackHost(host):
			errs = append(errs, fmt.Errorf("cluster.etcd[%d]: %w", i, &etcdExposedError{endpoint: e}))
		case scheme == "https" && c.TLS.IsZero():
			errs = append(errs, fmt.Errorf("cluster.etcd[%d] %q: an https endpoint needs [cluster.tls]: set ca_file, cert_file and key_file, so the node presents its certificate to etcd and checks that the cluster's CA signed etcd's "+
				"(make them with `evoclaw cluster ca` and `evoclaw cluster cert`, see docs/CLUSTER.md, \"Security\")", i, e))
		}
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if err := wire.ValidateAgentID(c.Name); err != nil {
		errs = append(errs, fmt.Errorf("cluster.name: %w", err))
	}
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("cluster.port %d: want 1-65535", c.Port))
	}
	if err := c.TLS.validate(); err != nil {
		errs = append(errs, err)
	} else if c.TLS.IsZero() && !loopbackHost(c.Host) {
		errs = append(errs, &exposedError{host: c.Host, port: c.Port})
	}
	if c.Advertise != "" {
		if _, p, err := net.SplitHostPort(c.Advertise); err != nil {
			errs = append(errs, fmt.Errorf("cluster.advertise %q: want host:port: %w", c.Advertise, err))
		} else if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			errs = append(errs, fmt.Errorf("cluster.advertise %q: port: want 1-65535", c.Advertise))
		}
	}
	if c.StateURL != "" {
		u, err := url.Parse(c.StateURL)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster.state_url: %w", err))
		case u.Scheme != "libsql" && u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, fmt.Errorf("cluster.state_url: scheme %q, want libsql, https or http", u.Scheme))
		case u.User != nil || u.RawQuery != "":
			errs = append(errs, fmt.Errorf("cluster.state_url: must not carry credentials or parameters; put the token in %s", StateTokenEnv))
		}
	}
	switch {
	case c.HistoryMaxAge < 0:
		errs = append(errs, fmt.Errorf("cluster.history_max_age %s: must not be negative (0 keeps the histories)", c.HistoryMaxAge))
	case c.HistoryMaxAge > 0 && c.HistoryMaxAge < MinHistoryMaxAge:
		errs = append(errs, fmt.Errorf("cluster.history_max_age %s: at least %s (a conversation idle that long starts over)", c.HistoryMaxAge, MinHistoryMaxAge))
	case c.HistoryMaxAge > 0 && c.StateURL == "":
		errs = append(errs, errors.New("cluster.history_max_age: set without state_url (it bounds the shared histories there)"))
	}
	return errors.Join(errs...)
}

// parseEndpoint splits an etcd endpoint, host:port or an http(s) URL
// with a host and port, into its scheme ("http" for host:port) and host.
func parseEndpoint(e string) (scheme, host string, err error) {
	scheme, hostport := "http", e
	if u, err := url.Parse(e); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		if u.Path != "" && u.Path != "/" || u.User != nil || u.RawQuery != "" {
			return "", "", fmt.Errorf("%q: want scheme://host:port only", e)
		}
		scheme, hostport = u.Scheme, u.Host
	}
	h, p, err := net.SplitHostPort(hostport)
	if err != nil || h == "" {
		return "", "", fmt.Errorf("%q: want host:port, https://host:port or http://host:port", e)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("%q: port: want 1-65535", e)
	}
	return scheme, h, nil
}

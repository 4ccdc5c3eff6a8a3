package broker

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// Defaults applied by Start to zero-valued Options fields.
const (
	// DefaultListen is the address the broker listens on when Options.Listen is empty.
	DefaultListen = "127.0.0.1:1883"
	// DefaultMaxPacketBytes bounds the size of one MQTT packet (1 MiB).
	DefaultMaxPacketBytes = 1 << 20
	// DefaultReloadInterval is how often the users file and the TLS files are
	// checked for changes.
	DefaultReloadInterval = 2 * time.Second
	// DefaultAgentPublishBytesPerSecond is what an agent identity may
	// publish, sustained (8 MiB/s); see Options.AgentPublishBytesPerSecond.
	DefaultAgentPublishBytesPerSecond = 8 << 20
)

// Errors returned by Start.
var (
	// ErrExposedAnonymous is returned when the broker would accept anonymous
	// clients on a non-loopback address.
	ErrExposedAnonymous = errors.New("anonymous mqtt broker exposed to the network")
	// ErrInvalidOptions is returned for malformed Options.
	ErrInvalidOptions = errors.New("invalid broker options")
)

// User is an identity given to the broker in memory rather than in the
// users file: the node's own session, tests.
type User struct {
	// Name is the username; for RoleAgent it must be a valid agent id.
	Name string
	// Role decides which topics the identity may use (acl.go).
	Role Role
	// Password is compared in constant time against a SHA-256 digest kept in
	// memory; it is never written anywhere.
	Password string
}

// Options configures the embedded broker. The zero value listens on
// DefaultListen and refuses every client: give it identities (Users,
// UsersFile) or allow anonymous clients on loopback (AllowAnonymous).
type Options struct {
	// Listen is the plain-TCP host:port to listen on. Empty means
	// DefaultListen. Port 0 picks a free port; see Broker.Addr for the one
	// chosen. An empty host, "0.0.0.0" and "::" listen on every interface;
	// passwords then cross the network in clear, so Start logs a warning:
	// use TLS for anything but loopback.
	Listen string
	// TLS configures an additional TLS listener. The zero value means none.
	TLS TLSOptions
	// Users are identities known in memory. A users-file entry with the same
	// name is ignored.
	Users []User
	// UsersFile is the identity file written by `evoclaw agents` (bcrypt
	// hashes). Empty means none. A missing file counts as empty. The broker
	// reloads it when it changes, and ends the sessions of identities that
	// were removed or whose password or role changed.
	UsersFile string
	// AllowAnonymous lets clients connect without credentials, with full
	// access to every topic. Start refuses it unless every listener is on a
	// loopback address.
	AllowAnonymous bool
	// ReloadInterval is how often UsersFile and the TLS certificate and key
	// are checked for changes. Zero means DefaultReloadInterval; negative
	// means never (call Broker.Reload).
	ReloadInterval time.Duration
	// ReloadOnSIGHUP makes the broker reload on SIGHUP too (instead of the
	// process dying of it). For the process that owns the broker, not for
	// libraries and tests.
	ReloadOnSIGHUP bool
	// MaxPacketBytes is the largest MQTT packet accepted from a client, in
	// bytes. Zero means DefaultMaxPacketBytes. A larger packet ends the
	// client's connection.
	MaxPacketBytes int
	// AgentPublishBytesPerSecond is what one agent identity may publish
	// (payloads and topics, over all its connections), sustained, with a
	// burst of 16 of the largest packets. A publish past it is dropped: a
	// QoS 1 one of an MQTT 5 client is answered "quota exceeded", of a
	// 3.1.1 client not at all, so the agent keeps it for later. The broker
	// queues what a slow subscriber has not read yet by count, not by
	// bytes, so without this one agent publishing megabyte reports as fast
	// as it could grew the node by gigabytes. Zero means
	// DefaultAgentPublishBytesPerSecond; negative, no limit.
	AgentPublishBytesPerSecond int
	// MaxPendingConnects is how many connections may be waiting to log in
	// at once, across listeners: from accept, through the TLS handshake and
	// the CONNECT packet (at most MaxConnectBytes), to the password check.
	// More are closed at once. Zero means DefaultMaxPendingConnects.
	MaxPendingConnects int
	// MaxPendingPerAddress is how many of those may come from one address
	// (an IPv6 /64 counts as one). Zero means the smaller of
	// DefaultMaxPendingPerAddress and MaxPendingConnects.
	MaxPendingPerAddress int
	// Logger receives the broker's logs. Nil discards them. The broker's own
	// informational chatter is logged at debug level.
	Logger *slog.Logger
	// LogLimiter rate-limits every log line built from what clients send
	// (refusals, mochi's packet errors); share one per process. Nil means a
	// limiter of the broker's own (boundlog.NewLimiter).
	LogLimiter *boundlog.Limiter
}

// Broker is a running embedded MQTT broker.
type Broker struct {
	opts   Options
	server *mqtt.Server
	ln     *listener
	tlsLn  *listener // nil without a TLS listener
	hook   *authHook
	cert   atomic.Pointer[tls.Certificate] // the TLS listener's current key pair
	log    *slog.Logger

	reloadMu sync.Mutex     // serialises Reload
	watch    *watcher       // polls the files and waits for hup
	hup      chan os.Signal // SIGHUP, when Options.ReloadOnSIGHUP
	// usersStamp is the users file as Reload last read it (freshAccount).
	usersStamp atomic.Pointer[fileStamp]

	closeOnce sync.Once
	closeErr  error // set once by closeOnce
}

// Start validates o, binds the listeners and starts serving. It returns once
// clients can connect.
func Start(o Options) (_ *Broker, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("start mqtt broker: %w", err)
	}
	log := o.Logger
	log = cmp.Or(log, slog.New(slog.DiscardHandler))
	log = log.With(logKeyComponent, "mqtt-broker")

	lim := o.LogLimiter
	if lim == nil {
		lim = boundlog.NewLimiter()
	}
	// Lines about clients quote what they sent: bounded and rate-limited.
	inputLog := boundlog.Logger(log, lim)
	server := newServer(o, log, lim)
	b := &Broker{opts: o, server: server, log: log}
	b.hook = &authHook{server: server, anonymous: o.AllowAnonymous, verify: newVerifier(), log: inputLog,
		agentRate: o.AgentPublishBytesPerSecond, agentBurst: 16 * o.MaxPacketBytes, takeovers: newTakeoverQuota()}
	accts, _ := buildAccounts(o.Users, nil)
	b.hook.accts.Store(&accts)
	if err := b.Reload(); err != nil {
		return nil, fmt.Errorf("start mqtt broker: %w", err)
	}
	if err := server.AddHook(b.hook, nil); err != nil {
		return nil, fmt.Errorf("start mqtt broker: add auth hook: %w", err)
	}

	defer func() {
		if err != nil {
			b.closeListeners()
		}
	}()
	nl, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("start mqtt broker: listen on %s: %w", o.Listen, err)
	}
	pending := newPendingGate(o.MaxPendingConnects, o.MaxPendingPerAddress)
	maxConnect := min(MaxConnectBytes, o.MaxPacketBytes)
	b.ln = newListener(listenerID, nl, inputLog, pending, maxConnect)
	if o.TLS.Listen != "" {
		cfg, err := o.TLS.serverTLS(&b.cert)
		if err != nil {
			return nil, fmt.Errorf("start mqtt broker: %w", err)
		}
		tl, err := net.Listen("tcp", o.TLS.Listen)
		if err != nil {
			return nil, fmt.Errorf("start mqtt broker: listen on %s: %w", o.TLS.Listen, err)
		}
		b.tlsLn = newListener(tlsListenerID, tls.NewListener(tl, cfg), inputLog, pending, maxConnect)
	}
	for _, ln := range b.listeners() {
		if err := server.AddListener(ln); err != nil {
			return nil, fmt.Errorf("start mqtt broker: add listener: %w", err)
		}
	}
	if err := server.Serve(); err != nil {
		_ = server.Close()
		return nil, fmt.Errorf("start mqtt broker: serve: %w", err)
	}
	dropSysTopics(server)
	var hup chan os.Signal
	if o.ReloadOnSIGHUP {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		b.hup = hup
	}
	files, interval := b.watchedFiles(), o.ReloadInterval
	if interval < 0 { // no polling; the goroutine still serves hup
		files, interval = nil, DefaultReloadInterval
	}
	b.watch = startWatcher(interval, files, hup, b.reloadChanged, log)
	if o.UsersFile != "" && o.ReloadInterval >= 0 {
		b.hook.fresh = b.freshAccount
	}

	log.Info("mqtt broker listening", logKeyAddr, b.Addr(), logKeyTLSAddr, b.TLSAddr(), logKeyAnonymous, o.AllowAnonymous,
		logKeyUsers, len(b.hook.accts.Load().byName))
	if !isLoopbackHost(hostOf(o.Listen)) {
		log.Warn("mqtt broker listens without TLS on a non-loopback address: passwords and commands cross the network in clear; prefer a tls listener",
			logKeyAddr, b.Addr())
	}
	return b, nil
}

// newServer makes the mochi server with the broker's capabilities and
// housekeeping; it does not serve yet.
func newServer(o Options, log *slog.Logger, lim *boundlog.Limiter) *mqtt.Server {
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
		Logger:       mochiLogger(log, lim),
		// No client may read $SYS (see auth.go), so its topics are not
		// worth a stop-the-world memory reading and twenty retained
		// publishes a second on an idle board: mochi's ticker is set past
		// any uptime, and dropSysTopics removes what Serve published.
		SysTopicResendInterval: sysTopicSeconds,
	})
	if err := slowHousekeeping(server, housekeepingEvery); err != nil {
		log.Warn("mqtt broker keeps mochi's housekeeping every second", logKeyError, err)
	}
	return server
}

// Reload re-reads the users file and the TLS certificate and key. On error
// the broker keeps what it had. Sessions the new users no longer allow are
// ended. The broker calls it itself when those files change (see
// Options.ReloadInterval); it is safe to call at any time.
func (b *Broker) Reload() error {
	b.reloadMu.Lock()
	defer b.reloadMu.Unlock()
	var file []FileUser
	var stamp fileStamp
	if b.opts.UsersFile != "" {
		stamp = stamps([]string{b.opts.UsersFile})[0]
		var err error
		file, err = ReadUsersFile(b.opts.UsersFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			b.log.Info("no mqtt users file yet; add identities with `evoclaw agents add`", logKeyFile, b.opts.UsersFile)
		case err != nil:
			return fmt.Errorf("reload: %w", err)
		default:
			if fi, err := os.Stat(b.opts.UsersFile); err == nil && !isPrivate(fi) {
				b.log.Warn("mqtt users file is readable by other users; chmod 600 it", logKeyFile, b.opts.UsersFile)
			}
		}
	}
	if b.opts.TLS.Listen != "" {
		c, err := b.opts.TLS.loadCert()
		if err != nil {
			return fmt.Errorf("reload: %w", err)
		}
		b.cert.Store(c)
	}
	accts, shadowed := buildAccounts(b.opts.Users, file)
	for _, name := range shadowed {
		b.log.Error("mqtt users file entry ignored: the name is reserved", logKeyUser, name, logKeyFile, b.opts.UsersFile)
	}
	b.hook.setAccounts(accts)
	b.usersStamp.Store(&stamp)
	b.log.Debug("mqtt identities loaded", logKeyUsers, len(accts.byName))
	return nil
}

// freshAccount is the authHook's second look at a login its identities
// refused: when the users file changed since Reload last read it (`evoclaw
// agents add` a moment ago: the watcher applies a change only once it has
// settled, up to two polls later), it returns the file's account of name,
// if the file has one, and the bcrypt cost unknown names are checked at.
// It installs nothing: a file read in the middle of a rewrite in place may
// lack entries, and must not end others' sessions; the watcher applies the
// whole file once it has settled. An account read so can only let a login
// in that the file as written now allows.
func (b *Broker) freshAccount(name string) (*account, int) {
	if p := b.usersStamp.Load(); p != nil && stamps([]string{b.opts.UsersFile})[0].same(*p) {
		return nil, 0
	}
	file, err := ReadUsersFile(b.opts.UsersFile)
	if err != nil {
		return nil, 0
	}
	accts, _ := buildAccounts(b.opts.Users, file)
	if a := accts.byName[name]; a != nil && a.inFile() {
		return a, accts.cost
	}
	return nil, 0
}

// reloadChanged is the watcher's callback.
func (b *Broker) reloadChanged() {
	if err := b.Reload(); err != nil {
		b.log.Error("mqtt broker kept its previous identities and certificate", logKeyError, err)
		return
	}
	b.log.Info("mqtt broker reloaded identities and certificate")
}

func (b *Broker) watchedFiles() []string {
	var files []string
	for _, f := range []string{b.opts.UsersFile, b.opts.TLS.CertFile, b.opts.TLS.KeyFile} {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

func (b *Broker) listeners() []*listener {
	var out []*listener
	for _, ln := range []*listener{b.ln, b.tlsLn} {
		if ln != nil {
			out = append(out, ln)
		}
	}
	return out
}

// closeListeners closes listeners Start opened before it failed.
func (b *Broker) closeListeners() {
	for _, ln := range b.listeners() {
		ln.Close(nil)
	}
}

// Addr returns the host:port the broker is bound to, with the real port when
// Options.Listen asked for port 0.
func (b *Broker) Addr() string { return b.ln.Address() }

// URL returns the address as a client broker URL, tcp://host:port.
func (b *Broker) URL() string { return "tcp://" + b.Addr() }

// TLSAddr returns the TLS listener's host:port, or "" without one.
func (b *Broker) TLSAddr() string {
	if b.tlsLn == nil {
		return ""
	}
	return b.tlsLn.Address()
}

// TLSURL returns the TLS listener as a client broker URL, tls://host:port,
// or "" without one.
func (b *Broker) TLSURL() string {
	if b.tlsLn == nil {
		return ""
	}
	return "tls://" + b.TLSAddr()
}

// Close stops accepting connections, closes every client connection and
// waits until each session has ended. The clients did not send DISCONNECT,
// so the broker publishes their wills while it shuts down: a client whose
// connection is closed later may still receive the wills of those before it,
// which says truthfully that they went offline. Retained messages are not
// kept. Close is idempotent and safe for concurrent use.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		if b.hup != nil {
			signal.Stop(b.hup)
		}
		b.watch.stop()
		// mochi's Close panics on a second call (it closes a channel).
		if err := b.server.Close(); err != nil {
			b.closeErr = fmt.Errorf("close mqtt broker: %w", err)
		}
		b.log.Info("mqtt broker stopped", logKeyAddr, b.Addr())
	})
	return b.closeErr
}

const (
	listenerID    = "evoclaw-tcp"
	tlsListenerID = "evoclaw-tls"
	// maxSessionExpirySeconds caps how long the broker keeps the session of a
	// disconnected client that asked for a persistent one.
	maxSessionExpirySeconds = 60 * 60
	// sysTopicSeconds is how often mochi refreshes its $SYS topics: ten
	// years, never in practice (the ticker takes a time.Duration).
	sysTopicSeconds = 10 * 365 * 24 * 60 * 60
)

// dropSysTopics removes the retained $SYS messages mochi publishes when it
// starts. Nobody may read them, and mochi copies every retained message
// each second to look for expired ones: two dozen $SYS packets made that
// about a megabyte of garbage a minute on an idle node.
func dropSysTopics(server *mqtt.Server) {
	for topic := range server.Topics.Retained.GetAll() {
		if strings.HasPrefix(topic, mqtt.SysPrefix+"/") {
			server.Topics.RetainMessage(packets.Packet{TopicName: topic})
		}
	}
}

// withDefaults fills zero fields and validates the rest.
func (o Options) withDefaults() (Options, error) {
	o.Listen = cmp.Or(o.Listen, DefaultListen)
	if err := checkListen(o.Listen); err != nil {
		return o, err
	}
	if err := o.TLS.validate(); err != nil {
		return o, err
	}
	seen := map[string]bool{}
	for _, u := range o.Users {
		switch {
		case u.Name == "":
			return o, fmt.Errorf("%w: broker user with an empty name", ErrInvalidOptions)
		case seen[u.Name]:
			return o, fmt.Errorf("%w: broker user %q given twice", ErrInvalidOptions, u.Name)
		case !u.Role.Valid():
			return o, fmt.Errorf("%w: broker user %q: role %q, want %q or %q", ErrInvalidOptions, u.Name, u.Role, RoleAgent, RoleOrchestrator)
		case u.Password == "":
			return o, fmt.Errorf("%w: broker user %q without a password", ErrInvalidOptions, u.Name)
		}
		if u.Role == RoleAgent {
			if err := wire.ValidateAgentID(u.Name); err != nil {
				return o, fmt.Errorf("%w: broker user: %w", ErrInvalidOptions, err)
			}
		}
		seen[u.Name] = true
	}
	o.ReloadInterval = cmp.Or(o.ReloadInterval, DefaultReloadInterval)
	o.AgentPublishBytesPerSecond = cmp.Or(o.AgentPublishBytesPerSecond, DefaultAgentPublishBytesPerSecond)
	switch {
	case o.MaxPacketBytes == 0:
		o.MaxPacketBytes = DefaultMaxPacketBytes
	case o.MaxPacketBytes < 0 || int64(o.MaxPacketBytes) > math.MaxUint32:
		return o, fmt.Errorf("%w: max packet bytes %d out of range", ErrInvalidOptions, o.MaxPacketBytes)
	}
	switch {
	case o.MaxPendingConnects == 0:
		o.MaxPendingConnects = DefaultMaxPendingConnects
	case o.MaxPendingConnects < 0:
		return o, fmt.Errorf("%w: max pending connects %d is negative", ErrInvalidOptions, o.MaxPendingConnects)
	}
	switch {
	case o.MaxPendingPerAddress == 0:
		o.MaxPendingPerAddress = min(DefaultMaxPendingPerAddress, o.MaxPendingConnects)
	case o.MaxPendingPerAddress < 0:
		return o, fmt.Errorf("%w: max pending connects per address %d is negative", ErrInvalidOptions, o.MaxPendingPerAddress)
	}
	if o.AllowAnonymous {
		for _, l := range []string{o.Listen, o.TLS.Listen} {
			if l != "" && !isLoopbackHost(hostOf(l)) {
				return o, &exposedError{listen: l}
			}
		}
	}
	return o, nil
}

// checkListen validates a host:port.
func checkListen(listen string) error {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %w", ErrInvalidOptions, listen, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > math.MaxUint16 {
		return fmt.Errorf("%w: listen address %q: port must be a number from 0 to 65535", ErrInvalidOptions, listen)
	}
	return nil
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
	return "refusing to allow anonymous clients on " + e.listen + ": anyone on the network could run commands on your edge agents; add identities with `evoclaw agents add` or listen on 127.0.0.1"
}

func (e *exposedError) Unwrap() error { return ErrExposedAnonymous }

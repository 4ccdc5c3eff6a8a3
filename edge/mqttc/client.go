package mqttc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrNotConnected means the client is between connections (the broker is
	// unreachable and it is reconnecting), so the operation was not attempted.
	ErrNotConnected = errors.New("not connected to mqtt broker")
	// ErrClosed means Close has been called.
	ErrClosed = errors.New("mqtt client closed")
	// ErrRefused means the broker answered CONNECT with a refusal such as bad
	// credentials; retrying with the same options will not help.
	ErrRefused = errors.New("mqtt broker refused the connection")
	// ErrSubscriptionRefused means the broker answered SUBSCRIBE with a failure.
	ErrSubscriptionRefused = errors.New("mqtt broker refused the subscription")
	// ErrInvalidOptions means Options failed validation.
	ErrInvalidOptions = errors.New("invalid mqtt client options")
	// ErrInvalidMessage means a message or topic filter cannot be sent as given.
	ErrInvalidMessage = errors.New("invalid mqtt message")

	// errNoAck means the broker did not acknowledge a packet in time.
	errNoAck = errors.New("no acknowledgement from broker")
)

// Log keys used by this package.
const (
	logKeyBroker   = "broker"
	logKeyClientID = "client_id"
	logKeyAttempt  = "attempt"
	logKeyRetryIn  = "retry_in"
	logKeyFilter   = "filter"
	logKeySubs     = "subscriptions"
	logKeyError    = "error"
)

// Client is a connection to an MQTT broker that reconnects by itself and
// restores its subscriptions after each reconnect.
type Client struct {
	pc   paho.Client
	opts Options
	url  string // broker URL without credentials, for messages
	log  *slog.Logger
	// connLog logs losses and reconnections within a quota (connlog.go).
	connLog *connLog
	done    chan struct{} // closed when Close starts

	// mu guards subs, closed and conn. handlers counts running OnConnect
	// callbacks; it is only added to under mu while closed is false.
	mu       sync.Mutex
	subs     map[string]*subscription // by topic filter
	closed   bool
	conn     *limitedConn // the connection open made last
	handlers sync.WaitGroup

	closeOnce sync.Once

	// restored is closed once the first connection's onConnect has
	// subscribed what was recorded; Connect waits for it (connect).
	restored     chan struct{}
	restoredOnce sync.Once

	// randN returns a uniform random number in [0, n); tests replace it.
	randN func(n int64) int64
	// pacer decides the waits between connection attempts (backoff.go).
	pacer *pacer
	// restoreLog logs connections dropped for a subscription not
	// restored (restore.go).
	restoreLog *restoreLog
}

// subscription is what Subscribe recorded for one topic filter.
type subscription struct {
	qos     byte
	handler func(Message)
}

// Connect connects to the broker in o.BrokerURL, retrying with capped
// exponential backoff while the broker is unreachable, until ctx is done. A
// refusal by the broker (bad credentials, say) fails at once with ErrRefused.
// paho cannot abandon an attempt in progress, so Connect may return up to
// Options.ConnectTimeout after ctx is done. Once connected, the client
// reconnects by itself whenever the connection is lost, until Close.
func Connect(ctx context.Context, o Options) (*Client, error) {
	o, u, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("connect to mqtt broker: %w", err)
	}
	c := &Client{
		opts:     o,
		url:      u.Redacted(),
		done:     make(chan struct{}),
		restored: make(chan struct{}),
		subs:     make(map[string]*subscription),
		randN:    rand.Int64N,
	}
	c.pacer = &pacer{jitter: o.ReconnectJitter, max: o.MaxReconnectInterval, now: time.Now, outage: time.Now(),
		randN: func(n int64) int64 { return c.randN(n) }}
	c.log = o.Logger.With(logKeyBroker, c.url, logKeyClientID, o.ClientID)
	c.connLog = newConnLog(c.log, time.Now)
	c.restoreLog = newRestoreLog(time.Now)
	if o.TLSConfig != nil && o.TLSConfig.InsecureSkipVerify {
		c.log.Warn("TLS certificate verification of the mqtt broker is OFF (insecure_skip_verify): anyone on the network path can read and forge every message")
	}
	c.pc = paho.NewClient(c.pahoOptions(u))
	if err := c.connect(ctx); err != nil {
		return nil, fmt.Errorf("connect to mqtt broker %s: %w", c.url, err)
	}
	return c, nil
}

// pahoOptions maps o onto paho's options.
func (c *Client) pahoOptions(u *url.URL) *paho.ClientOptions {
	o := c.opts
	po := paho.NewClientOptions().
		AddBroker(u.String()).
		SetClientID(o.ClientID).
		SetUsername(o.Username).
		SetPassword(o.Password).
		SetCleanSession(true).
		SetStore(newCopyingStore()). // store.go: a copy of what it resends
		SetProtocolVersion(4).       // 3.1.1, without paho's silent fallback to 3.1
		SetKeepAlive(o.KeepAlive).
		SetPingTimeout(min(pingTimeout, o.KeepAlive)).
		SetConnectTimeout(o.ConnectTimeout).
		SetWriteTimeout(o.ConnectTimeout).
		SetCustomOpenConnectionFn(c.open). // limit.go: bounds what paho reads
		SetAutoReconnect(true).
		SetMaxReconnectInterval(reconnectPahoWait). // the pacer waits instead
		SetConnectRetry(false).                     // Connect retries itself, honouring ctx
		SetResumeSubs(false).                       // onConnect restores subscriptions
		SetOrderMatters(true).
		SetOnConnectHandler(func(paho.Client) { c.onConnect() }).
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			c.pacer.lost()
			c.connLog.lostConnection(err)
		}).
		SetConnectionNotificationHandler(func(_ paho.Client, n paho.ConnectionNotification) {
			if f, ok := n.(paho.ConnectionNotificationFailed); ok && refusal(f.Reason) {
				c.pacer.refused()
			}
		}).
		SetReconnectingHandler(func(paho.Client, *paho.ClientOptions) {
			// Runs on paho's reconnect goroutine before each attempt.
			d := c.pacer.next()
			c.log.Debug("mqtt reconnect attempt", logKeyRetryIn, d)
			c.sleep(d)
		})
	if o.TLSConfig != nil {
		po.SetTLSConfig(o.TLSConfig)
	}
	if w := o.Will; w != nil {
		po.SetBinaryWill(w.Topic, w.Payload, w.QoS, w.Retained)
	}
	return po
}

// connect makes the first connection, retrying until ctx is done.
func (c *Client) connect(ctx context.Context) error {
	var last error // of the latest failed attempt
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return withLast(err, last)
		}
		tok := c.pc.Connect()
		select {
		case <-tok.Done():
		case <-ctx.Done():
			<-tok.Done() // bounded by ConnectTimeout
			if tok.Error() == nil {
				c.Close()
				return ctx.Err()
			}
			return withLast(ctx.Err(), tok.Error())
		}
		last = tok.Error()
		if last == nil {
			// paho runs onConnect on a goroutine of its own: wait for it,
			// or a Subscribe made as soon as Connect returns could be
			// recorded before onConnect copies the record, and be sent
			// twice (a second SUBSCRIBE, and the filter's retained
			// messages delivered again).
			select {
			case <-c.restored:
			case <-ctx.Done(): // connected all the same
			}
			return nil
		}
		if refusal(last) {
			return fmt.Errorf("%w: %w", ErrRefused, last)
		}
		d := c.pacer.next()
		args := []any{logKeyAttempt, attempt, logKeyRetryIn, d, logKeyError, last}
		if h := tlsHint(last); h != "" {
			args = append(args, logKeyHint, h)
		}
		c.log.Warn("mqtt connection attempt failed", args...)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// sleep waits for d or until Close starts.
func (c *Client) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.done:
	}
}

// withLast adds the last attempt's error, if any, to the reason for giving up.
func withLast(reason, last error) error {
	if last == nil {
		return reason
	}
	return fmt.Errorf("%w (last attempt: %w)", reason, last)
}

// refusal reports whether err is a CONNACK refusal that retrying cannot fix.
func refusal(err error) bool {
	return errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword) ||
		errors.Is(err, packets.ErrorRefusedNotAuthorised) ||
		errors.Is(err, packets.ErrorRefusedIDRejected) ||
		errors.Is(err, packets.ErrorRefusedBadProtocolVersion)
}

// onConnect runs on paho's goroutine after every connection: it restores the
// recorded subscriptions, then calls Options.OnConnect. When the broker
// refuses a subscription or does not acknowledge it, the connection is
// dropped instead, and OnConnect does not run (restore.go).
func (c *Client) onConnect() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.handlers.Add(1)
	subs := maps.Clone(c.subs)
	conn := c.conn
	c.mu.Unlock()
	defer c.handlers.Done()
	defer c.restoredOnce.Do(func() { close(c.restored) })

	c.pacer.connected()
	c.connLog.connectedAgain(len(subs))
	// Send every SUBSCRIBE before waiting for any acknowledgement.
	toks := make(map[string]paho.Token, len(subs))
	for filter, s := range subs {
		toks[filter] = c.pc.Subscribe(filter, s.qos, s.route)
	}
	failed := make(map[string]error)
	for filter, tok := range toks {
		err := c.waitSubscribed(filter, tok)
		switch {
		case err == nil:
		case errors.Is(err, ErrClosed):
			return
		case errors.Is(err, ErrNotConnected):
			// Lost meanwhile: the next connection restores it.
			c.log.Debug("restore mqtt subscription", logKeyFilter, filter, logKeyError, err)
			return
		default:
			failed[filter] = err
		}
	}
	if len(failed) > 0 {
		c.dropUnrestored(conn, failed)
		return
	}
	c.restoredOnce.Do(func() { close(c.restored) })
	if c.opts.OnConnect != nil {
		c.opts.OnConnect(c)
	}
}

// Connected reports whether the client currently has a connection to the
// broker.
func (c *Client) Connected() bool { return c.pc.IsConnectionOpen() }

// Close disconnects cleanly and stops reconnecting. The broker discards the
// will, because the client sent DISCONNECT; see the package documentation.
// Close waits for a running OnConnect callback, is idempotent and may be
// called from any goroutine, but not from OnConnect or a subscription
// handler. Close returns within a fraction of a second even while the
// broker is unreachable. It ends the wait before the next reconnect
// attempt, and no attempt starts after it (open); paho cannot interrupt an
// attempt already under way: that goroutine of paho's may run on in the
// background for up to ConnectTimeout, and then ends without reconnecting.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		close(c.done)
		c.mu.Unlock()
		c.pc.Disconnect(uint(closeQuiesce / time.Millisecond))
		c.handlers.Wait()
		c.log.Info("mqtt client closed")
	})
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// wait waits for tok until ctx is done, the client is closed, or timeout
// passes (zero: no timeout), and returns tok's error.
func (c *Client) wait(ctx context.Context, tok paho.Token, timeout time.Duration) error {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	case <-expired:
		return fmt.Errorf("%w within %v", errNoAck, timeout)
	}
	if err := tok.Error(); err != nil {
		if errors.Is(err, paho.ErrNotConnected) {
			return fmt.Errorf("%w: %w", ErrNotConnected, err)
		}
		return err
	}
	return nil
}

package mqttc

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// Why a connection whose subscriptions were not all restored is dropped:
// a client without them hears nothing, yet it looked connected, and
// Options.OnConnect ran all the same. An agent whose broker refused its
// commands subscription on a reconnect (an ACL mistake; SUBACK 0x80), or
// never acknowledged it (a broker under load), announced itself online
// and the node sent it calls that each timed out. Such a connection is
// now closed before OnConnect runs, without DISCONNECT (the broker
// publishes the will), and the client reconnects with its usual pacing,
// the waits doubling as after a refusal (backoff.go): a broker whose ACL
// is fixed, or that caught up, gets the client back at the next attempt.
const (
	// restoreLogLines is how many lines about unrestored subscriptions a
	// client logs per restoreLogWindow; the rest are counted.
	restoreLogLines = 3
	// restoreLogWindow is the window of restoreLogLines: with the waits
	// doubling up to 30 s, at most 18 lines an hour.
	restoreLogWindow = 10 * time.Minute
)

// errNotRestored is the loss paho reports for a connection dropped because
// a subscription was not restored.
var errNotRestored = errors.New("connection dropped: a subscription was not restored")

// logKeyUnlogged counts the unrestored-subscription lines not logged since
// the last one.
const logKeyUnlogged = "unlogged"

// restoreLog logs, within its quota, the connections dropped because a
// subscription was not restored.
type restoreLog struct {
	win *rate.Window
	now func() time.Time
}

func newRestoreLog(now func() time.Time) *restoreLog {
	return &restoreLog{win: rate.NewWindow(restoreLogLines, restoreLogWindow), now: now}
}

// subscriptionHint says what to check when the broker refused or did not
// acknowledge a subscription, and "" for other errors.
func (c *Client) subscriptionHint(err error) string {
	if errors.Is(err, ErrSubscriptionRefused) {
		who := "this client"
		if c.opts.Username != "" {
			who = fmt.Sprintf("user %q", c.opts.Username)
		}
		return "the broker's ACL does not let " + who + " read this topic: check the broker's ACL (mosquitto: its acl_file) and that this client logs in as the right user"
	}
	if errors.Is(err, errNoAck) {
		return "the broker did not acknowledge the subscription in time: it may be overloaded"
	}
	return ""
}

// dropUnrestored closes conn, the connection whose subscriptions in failed
// (by filter) could not be restored, so that the client reconnects, and
// logs why within the quota.
func (c *Client) dropUnrestored(conn *limitedConn, failed map[string]error) {
	c.pacer.unusable()
	filters := make([]string, 0, len(failed))
	var first error
	for f, err := range failed {
		filters = append(filters, f)
		if first == nil || errors.Is(err, ErrSubscriptionRefused) {
			first = err
		}
	}
	if suppressed, ok := c.restoreLog.win.Allow(c.restoreLog.now()); ok {
		args := []any{logKeyFilter, strings.Join(filters, " "), logKeyError, first}
		if h := c.subscriptionHint(first); h != "" {
			args = append(args, logKeyHint, h)
		}
		if suppressed > 0 {
			args = append(args, logKeyUnlogged, suppressed)
		}
		c.log.Error("mqtt subscription not restored: dropping the connection and reconnecting", args...)
	}
	if conn != nil {
		conn.drop(errNotRestored)
	}
}

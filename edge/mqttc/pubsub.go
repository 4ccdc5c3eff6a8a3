package mqttc

import (
	"context"
	"fmt"
	"strings"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// subackFailure is the SUBACK return code for a refused subscription.
const subackFailure = 0x80

// Publish sends m and waits until the broker has acknowledged it (QoS 1 and
// 2) or it has been written (QoS 0), ctx is done, or the client is closed.
// While the client is between connections Publish fails at once with
// ErrNotConnected rather than queue the message. When ctx ends first the
// message may still be delivered later: QoS 1 is at least once.
func (c *Client) Publish(ctx context.Context, m Message) error {
	if err := validatePublish(m); err != nil {
		return fmt.Errorf("publish to %s: %w", m.Topic, err)
	}
	if c.isClosed() {
		return fmt.Errorf("publish to %s: %w", m.Topic, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish to %s: %w", m.Topic, err)
	}
	if !c.pc.IsConnectionOpen() {
		return fmt.Errorf("publish to %s: %w", m.Topic, ErrNotConnected)
	}
	tok := c.pc.Publish(m.Topic, m.QoS, m.Retained, m.Payload)
	if err := c.wait(ctx, tok, 0); err != nil {
		return fmt.Errorf("publish to %s: %w", m.Topic, err)
	}
	return nil
}

// Subscribe subscribes to topic (a filter; wildcards allowed) at qos and
// calls h for every message that matches. The subscription is recorded and
// re-established after every reconnect, before Options.OnConnect runs; a
// reconnection where the broker refuses it, or does not acknowledge it, is
// dropped and retried (restore.go).
// Subscribing again to the same filter replaces its handler.
//
// When connected, Subscribe waits for the broker's acknowledgement, for at
// most Options.ConnectTimeout. When the client is between connections, the
// subscription is only recorded and Subscribe returns nil: it takes effect on
// the next connection.
//
// h runs on paho's routing goroutine; see the package documentation. It
// must return quickly and hand any real work off.
func (c *Client) Subscribe(topic string, qos byte, h func(Message)) error {
	if err := validateFilter(topic, qos); err != nil {
		return fmt.Errorf("subscribe to %s: %w", topic, err)
	}
	if h == nil {
		return fmt.Errorf("subscribe to %s: %w: nil handler", topic, ErrInvalidMessage)
	}
	s := &subscription{qos: qos, handler: h}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("subscribe to %s: %w", topic, ErrClosed)
	}
	c.subs[topic] = s
	c.mu.Unlock()

	// Recorded before this check: if the connection comes up after it,
	// onConnect will see the record and subscribe.
	if !c.pc.IsConnectionOpen() {
		c.log.Debug("mqtt subscription recorded until reconnect", logKeyFilter, topic)
		return nil
	}
	err := c.waitSubscribed(topic, c.pc.Subscribe(topic, qos, s.route))
	switch {
	case err == nil:
		return nil
	case !c.pc.IsConnectionOpen() && !c.isClosed():
		// The connection dropped meanwhile; onConnect will restore it.
		return nil
	}
	c.mu.Lock()
	if c.subs[topic] == s {
		delete(c.subs, topic)
	}
	c.mu.Unlock()
	if h := c.subscriptionHint(err); h != "" {
		return fmt.Errorf("subscribe to %s: %w (%s)", topic, err, h)
	}
	return fmt.Errorf("subscribe to %s: %w", topic, err)
}

// waitSubscribed waits for a SUBSCRIBE token and checks the broker's answer.
func (c *Client) waitSubscribed(filter string, tok paho.Token) error {
	if err := c.wait(context.Background(), tok, c.opts.ConnectTimeout); err != nil {
		return err
	}
	if st, ok := tok.(*paho.SubscribeToken); ok {
		if code, ok := st.Result()[filter]; ok && code == subackFailure {
			return ErrSubscriptionRefused
		}
	}
	return nil
}

// route adapts a paho message to the recorded handler.
func (s *subscription) route(_ paho.Client, m paho.Message) {
	s.handler(Message{Topic: m.Topic(), Payload: m.Payload(), QoS: m.Qos(), Retained: m.Retained()})
}

// validateFilter checks a topic filter the way the broker would.
func validateFilter(filter string, qos byte) error {
	if filter == "" {
		return fmt.Errorf("%w: empty topic filter", ErrInvalidMessage)
	}
	if qos > 2 {
		return fmt.Errorf("%w: qos %d", ErrInvalidMessage, qos)
	}
	levels := strings.Split(filter, "/")
	for i, l := range levels {
		switch {
		case l == "#" && i != len(levels)-1,
			l != "#" && l != "+" && strings.ContainsAny(l, "+#"):
			return fmt.Errorf("%w: misplaced wildcard in topic filter %q", ErrInvalidMessage, filter)
		}
	}
	return nil
}

package edge

import (
	"context"
	"errors"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Store and forward: a result report that cannot be published (the broker
// is unreachable) is kept in the agent's SQLite outbox and delivered after
// the next connect, oldest first. While anything waits there, new reports
// queue behind it, so the orchestrator sees them in the order they were
// produced. The outbox is bounded (OutboxLen reports, OutboxBytes bytes);
// beyond either the oldest are dropped, which the log says: an
// orchestrator that waited that long has timed them out, and the request
// log still holds each result for a redelivered command.

// outboxRetry is how often a non-empty outbox is retried between connects.
const outboxRetry = 5 * time.Second

// outboxBatch is how many kept reports one drain pass reads.
const outboxBatch = 64

// publishReport publishes a result report, or keeps it in the outbox when
// the broker cannot take it now. It fails only when neither works.
func (a *Agent) publishReport(ctx context.Context, b []byte) error {
	if a.waiting.Load() == 0 {
		err := a.publishNow(ctx, b)
		if err == nil || !undeliverable(err) {
			return err
		}
		a.log.Warn("broker unreachable: keeping the report to deliver after reconnect", "err", err)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	dropped, err := a.store.Enqueue(wctx, wire.ReportsTopic(a.cfg.AgentID), b,
		sqlite.OutboxBound{Len: a.cfg.MQTT.OutboxLen, Bytes: a.cfg.MQTT.OutboxBytes})
	if err != nil {
		return err
	}
	a.waiting.Add(1 - dropped)
	if dropped > 0 {
		a.log.Error("outbox full: dropped the oldest kept reports", "dropped", dropped,
			"outbox_len", a.cfg.MQTT.OutboxLen, "outbox_bytes", a.cfg.MQTT.OutboxBytes)
	}
	a.kickOutbox()
	return nil
}

// undeliverable reports whether err means the broker cannot take a message
// now (disconnected, or no ack in time), as opposed to a bad message.
func undeliverable(err error) bool {
	return errors.Is(err, mqttc.ErrNotConnected) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, mqttc.ErrClosed) ||
		errors.Is(err, context.Canceled)
}

// kickOutbox asks the drain loop for a pass now.
func (a *Agent) kickOutbox() {
	select {
	case a.outboxKick <- struct{}{}:
	default:
	}
}

// drainOutbox delivers kept reports, oldest first, after every connect and
// every outboxRetry while any wait. It stops at the first failure and
// tries again later; a report leaves the outbox only once the broker has
// acknowledged it.
func (a *Agent) drainOutbox(ctx context.Context) {
	if n, err := a.store.OutboxLen(ctx); err == nil {
		a.waiting.Store(n) // reports kept by an earlier run
		if n > 0 {
			a.log.Info("reports kept from an earlier run wait for delivery", "count", n)
		}
	}
	t := time.NewTicker(outboxRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.outboxKick:
		case <-t.C:
		}
		for a.waiting.Load() > 0 && ctx.Err() == nil {
			items, err := a.store.Outbox(ctx, outboxBatch)
			if err != nil {
				a.log.Error("read outbox", "err", err)
				break
			}
			if len(items) == 0 {
				a.waiting.Store(0)
				break
			}
			sent := 0
			for _, it := range items {
				if err := a.publishNow(ctx, it.Payload); err != nil {
					break
				}
				if err := a.store.Dequeue(context.WithoutCancel(ctx), it.ID); err != nil {
					// Delivered but still kept: it would go again. The
					// orchestrator drops a duplicate result by request_id.
					a.log.Error("dequeue delivered report", "id", it.ID, "err", err)
					break
				}
				a.waiting.Add(-1)
				sent++
			}
			if sent > 0 {
				a.log.Info("delivered kept reports", "count", sent, "waiting", a.waiting.Load())
			}
			if sent < len(items) {
				break // the broker went away again: wait for the next kick
			}
		}
	}
}

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// OutboxItem is one message waiting in the outbox.
type OutboxItem struct {
	ID       int64
	Topic    string
	Payload  []byte
	QueuedAt time.Time
}

// OutboxBound bounds the outbox. A zero (or negative) field is no bound.
type OutboxBound struct {
	// Len is the most messages kept.
	Len int
	// Bytes is the most payload bytes kept, all messages together; the
	// newest message is kept even when it alone is larger.
	Bytes int64
}

// Enqueue keeps a message for later delivery and returns after the commit.
// The outbox holds what bound allows; to make room the oldest are dropped,
// and dropped says how many.
func (s *Store) Enqueue(ctx context.Context, topic string, payload []byte, bound OutboxBound) (dropped int64, err error) {
	if topic == "" {
		return 0, errors.New("enqueue: topic is empty")
	}
	now := time.Now().UnixMilli()
	err = s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		dropped = 0
		if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (topic, payload, queued_ms) VALUES (?, ?, ?)`, topic, payload, now); err != nil {
			return fmt.Errorf("insert outbox message: %w", err)
		}
		if bound.Len > 0 {
			n, err := execCount(ctx, tx, `DELETE FROM outbox WHERE id NOT IN (SELECT id FROM outbox ORDER BY id DESC LIMIT ?)`, bound.Len)
			if err != nil {
				return fmt.Errorf("bound outbox: %w", err)
			}
			dropped += n
		}
		if bound.Bytes > 0 {
			// The newest first, keeping each while the sum up to it fits.
			n, err := execCount(ctx, tx, `DELETE FROM outbox WHERE id IN (SELECT id FROM
				(SELECT id, sum(length(payload)) OVER (ORDER BY id DESC) AS upto FROM outbox)
				WHERE upto > ? AND id < (SELECT max(id) FROM outbox))`, bound.Bytes)
			if err != nil {
				return fmt.Errorf("bound outbox bytes: %w", err)
			}
			dropped += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("enqueue on %s: %w", topic, err)
	}
	return dropped, nil
}

// Outbox returns the oldest n messages, oldest first.
func (s *Store) Outbox(ctx context.Context, n int) ([]OutboxItem, error) {
	var items []OutboxItem
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		items = items[:0]
		rows, err := tx.QueryContext(ctx, `SELECT id, topic, payload, queued_ms FROM outbox ORDER BY id LIMIT ?`, n)
		if err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var it OutboxItem
			var ms int64
			if err := rows.Scan(&it.ID, &it.Topic, &it.Payload, &ms); err != nil {
				return fmt.Errorf("read outbox: %w", err)
			}
			it.QueuedAt = time.UnixMilli(ms)
			items = append(items, it)
		}
		return rows.Err()
	})
	if err != nil {
		// The queued read may still run after an early return (ctx ended):
		// touch its result only on success.
		return nil, err
	}
	return items, nil
}

// Dequeue deletes a delivered message.
func (s *Store) Dequeue(ctx context.Context, id int64) error {
	return s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM outbox WHERE id = ?`, id); err != nil {
			return fmt.Errorf("dequeue outbox message %d: %w", id, err)
		}
		return nil
	})
}

// OutboxLen counts the messages waiting.
func (s *Store) OutboxLen(ctx context.Context) (int64, error) {
	var n int64
	err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM outbox`).Scan(&n)
	})
	if err != nil {
		return 0, err // n may still be written by the queued read: leave it
	}
	return n, nil
}

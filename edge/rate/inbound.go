package rate

import (
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/defaults"
)

// Defaults of InboundLimits.
const (
	// DefaultMessagesPerSecond is the sustained message rate allowed per key:
	// far above what an agent answering its commands sends (its reports
	// are bounded by the commands it gets; progress by its own limit),
	// since a result dropped here reaches its caller as a timeout.
	DefaultMessagesPerSecond = 1000
	// DefaultMessageBurst is how many messages a key may send at once.
	DefaultMessageBurst = 2000
	// DefaultBytesPerSecond is the sustained payload rate allowed per key (8 MiB/s).
	DefaultBytesPerSecond = 8 << 20
	// DefaultByteBurst is how many payload bytes a key may send at once
	// (16 MiB: many maximum-size packets).
	DefaultByteBurst = 16 << 20
)

// InboundLimits configure Inbound. The zero value is ready: every zero
// field takes its Default* value.
type InboundLimits struct {
	// MessagesPerSecond is the sustained messages per second per key. Zero
	// means DefaultMessagesPerSecond; negative means no message limit.
	MessagesPerSecond float64 `toml:"messages_per_second"`
	// MessageBurst is the messages a key may send at once. Zero means
	// DefaultMessageBurst.
	MessageBurst int `toml:"message_burst"`
	// BytesPerSecond is the sustained payload bytes per second per key.
	// Zero means DefaultBytesPerSecond; negative means no byte limit.
	BytesPerSecond float64 `toml:"bytes_per_second"`
	// ByteBurst is the payload bytes a key may send at once. Zero means
	// DefaultByteBurst.
	ByteBurst int `toml:"byte_burst"`
}

func (l InboundLimits) withDefaults() InboundLimits {
	if l.MessagesPerSecond == 0 {
		l.MessagesPerSecond = DefaultMessagesPerSecond
	}
	defaults.Positive(&l.MessageBurst, DefaultMessageBurst)
	if l.BytesPerSecond == 0 {
		l.BytesPerSecond = DefaultBytesPerSecond
	}
	defaults.Positive(&l.ByteBurst, DefaultByteBurst)
	return l
}

// Inbound limits messages and bytes per key (an agent id) with two token
// buckets each. It tracks at most DefaultMaxKeys keys: when that many are
// busy, a new key is refused until idle ones (full buckets) are forgotten.
type Inbound struct {
	limits InboundLimits

	mu      sync.Mutex // guards keys, dropped and total
	keys    keySet[inboundKey]
	dropped map[string]uint64 // messages refused per key since start
	total   uint64            // messages refused since start
}

type inboundKey struct{ msgs, bytes *Limiter }

// NewInbound returns an Inbound applying l.
func NewInbound(l InboundLimits) *Inbound {
	return &Inbound{limits: l.withDefaults(), keys: newKeySet[inboundKey](DefaultMaxKeys), dropped: map[string]uint64{}}
}

// Allow reports whether key may deliver a message of size bytes at now,
// taking its tokens if so. A refused message takes nothing and is counted.
func (in *Inbound) Allow(key string, size int, now time.Time) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	k, ok := in.keys.get(key,
		func(k inboundKey) bool { return k.msgs.Full(now) && k.bytes.Full(now) },
		func() inboundKey {
			return inboundKey{msgs: New(in.limits.MessagesPerSecond, in.limits.MessageBurst),
				bytes: New(in.limits.BytesPerSecond, in.limits.ByteBurst)}
		})
	if !ok {
		in.refuse(key)
		return false
	}
	limitMsgs, limitBytes := in.limits.MessagesPerSecond > 0, in.limits.BytesPerSecond > 0
	// Check both before taking from either, so a refusal costs nothing.
	if limitMsgs && !k.msgs.Has(now, 1) || limitBytes && !k.bytes.Has(now, size) {
		in.refuse(key)
		return false
	}
	if limitMsgs {
		k.msgs.Take(now, 1)
	}
	if limitBytes {
		k.bytes.Take(now, size)
	}
	return true
}

func (in *Inbound) refuse(key string) {
	in.total++
	if _, ok := in.dropped[key]; ok || len(in.dropped) < DefaultMaxKeys {
		in.dropped[key]++
	}
}

// Dropped returns the messages refused since start, in total and per key
// (a copy; keys beyond DefaultMaxKeys count only in the total).
func (in *Inbound) Dropped() (total uint64, byKey map[string]uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	byKey = make(map[string]uint64, len(in.dropped))
	for k, v := range in.dropped {
		byKey[k] = v
	}
	return in.total, byKey
}

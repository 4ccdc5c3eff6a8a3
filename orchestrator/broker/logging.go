package broker

import (
	"context"
	"errors"
	"log/slog"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/evoclaw/evoclaw/edge/boundlog"
)

// Log keys used by this package.
const (
	logKeyComponent = "component"
	logKeyAddr      = "addr"
	logKeyRemote    = "remote"
	logKeyClient    = "client"
	logKeyUser      = "user"
	logKeyError     = "error"
	logKeyReason    = "reason"
	logKeyOp        = "op"
	logKeyTopic     = "topic"
	logKeyFile      = "file"
	logKeyUsers     = "identities"
	logKeyTLSAddr   = "tls_addr"
	logKeyAnonymous = "anonymous"
	logKeyLimit     = "limit"
	// Of a session takeover (takeover.go): the address of the client
	// taken over, of the one taking over, and the takeovers of the id not
	// logged since its last line.
	logKeyOldRemote = "old_remote"
	logKeyNewRemote = "new_remote"
	logKeyUnlogged  = "takeovers_unlogged"
)

// demoteInfo wraps the handler given to mochi so that its informational
// chatter (hooks added, listeners attached, server starting) lands at debug
// level; its warnings and errors keep their level.
type demoteInfo struct{ slog.Handler }

// Enabled reports whether the wrapped handler takes records at the demoted level.
func (h demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(l))
}

// Handle passes r on at its demoted level.
func (h demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the demotion on derived handlers.
func (h demoteInfo) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoteInfo{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the demotion on derived handlers.
func (h demoteInfo) WithGroup(name string) slog.Handler {
	return demoteInfo{h.Handler.WithGroup(name)}
}

func demote(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

// mochiLogger is the logger given to mochi. mochi logs whole packets (a
// packets.Packet, payload included, printed as decimal bytes) at warn level
// when it fails to process one, e.g. a denied publish: a 1 MiB payload made a
// 4 MiB line. Its records are summarised (packets become type, topic and
// size), bounded and rate-limited with the broker's other client-driven
// lines, and its informational chatter is demoted to debug.
func mochiLogger(log *slog.Logger, lim *boundlog.Limiter) *slog.Logger {
	return slog.New(demoteInfo{packetSummary{boundlog.New(log.Handler(), lim, nil)}})
}

// packetSummary replaces packet values by what a reader needs of them.
type packetSummary struct{ slog.Handler }

// Handle passes r on with its packets summarised. mochi's warning about a
// packet it refused because the auth hook did repeats the hook's own line:
// it goes to debug.
func (h packetSummary) Handle(ctx context.Context, r slog.Record) error {
	level := r.Level
	if level >= slog.LevelWarn && refusedByHook(r) {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		level = slog.LevelDebug
	}
	out := slog.NewRecord(r.Time, level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(summarise(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

// WithAttrs keeps the summary on derived handlers.
func (h packetSummary) WithAttrs(attrs []slog.Attr) slog.Handler {
	b := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		b[i] = summarise(a)
	}
	return packetSummary{h.Handler.WithAttrs(b)}
}

// WithGroup keeps the summary on derived handlers.
func (h packetSummary) WithGroup(name string) slog.Handler {
	return packetSummary{h.Handler.WithGroup(name)}
}

// refusedByHook reports whether r is about a packet refused by the auth
// hook: its error is "not authorized", "packet rejected", or the closed
// connection that follows.
func refusedByHook(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "error" {
			return true
		}
		err, ok := a.Value.Any().(error)
		found = ok && (errors.Is(err, packets.ErrNotAuthorized) || errors.Is(err, packets.ErrRejectPacket) ||
			errors.Is(err, errRevoked) || errors.Is(err, mqtt.ErrConnectionClosed))
		return false
	})
	return found
}

func summarise(a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindAny {
		return a
	}
	var pk *packets.Packet
	switch v := a.Value.Any().(type) {
	case packets.Packet:
		pk = &v
	case *packets.Packet:
		pk = v
	default:
		return a
	}
	if pk == nil {
		return a
	}
	return slog.Group(a.Key, "type", packets.PacketNames[pk.FixedHeader.Type], logKeyTopic, pk.TopicName,
		"payload_bytes", len(pk.Payload))
}

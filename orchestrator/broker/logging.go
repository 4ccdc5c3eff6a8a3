package broker

import (
	"context"
	"log/slog"
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
	// logKeySuppressed counts refusals not logged since the previous line.
	logKeySuppressed = "suppressed"
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

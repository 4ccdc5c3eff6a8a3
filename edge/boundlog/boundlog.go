// Package boundlog provides a slog handler that bounds log lines built
// from outside input (MQTT payloads, topics, client ids, usernames, error
// strings that quote them) in length and in rate, so that a hostile client
// cannot fill a Pi's disk through the log, and the helpers (Cut, String,
// Attr) that bound such values where they go elsewhere, into audit rows.
//
// Wrap a handler with New: every string, error and Stringer attribute (and
// the message) is cut to MaxValueBytes with its original length noted, byte
// slices are replaced by their length, other values by their type, and
// records at Info and above pass only while the shared Limiter (a
// rate.Window) admits them; the next record that passes carries a
// "suppressed" count. Debug records are cut but not counted: debug output is
// asked for on purpose, to diagnose, and must not use up the budget of the
// lines an operator sees by default. One Limiter per process, shared by
// every path that logs outside input, keeps the total bounded.
//
// # Concurrency
//
// A Handler and a Limiter are safe for concurrent use; handlers derived
// with WithAttrs and WithGroup share their parent's Limiter.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package boundlog

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// Defaults of the shared limiter and of the cut.
const (
	// DefaultBurst lines pass per DefaultWindow; the rest are counted.
	DefaultBurst = 20
	// DefaultWindow is the limiter's window.
	DefaultWindow = 10 * time.Second
	// MaxValueBytes is the most bytes of one string value kept in a line.
	MaxValueBytes = 200
	// KeySuppressed carries the count of lines dropped before this one.
	KeySuppressed = "suppressed"
)

// Limiter is the rate limit shared by the handlers of one process.
type Limiter = rate.Window

// NewLimiter returns a Limiter letting DefaultBurst lines through per
// DefaultWindow.
func NewLimiter() *Limiter { return rate.NewWindow(DefaultBurst, DefaultWindow) }

// Cut returns s when it is at most n bytes, else its first n bytes (cut on a
// rune boundary) followed by "…(N bytes)" giving the original length.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// String cuts s to MaxValueBytes.
func String(s string) string { return Cut(s, MaxValueBytes) }

// Handler bounds the records it passes on; see the package documentation.
type Handler struct {
	next slog.Handler
	lim  *Limiter
	now  func() time.Time
}

// New wraps next. lim may be shared by many handlers; nil means no rate
// limit (only the cut). now is the clock; nil means time.Now.
func New(next slog.Handler, lim *Limiter, now func() time.Time) *Handler {
	if now == nil {
		now = time.Now
	}
	return &Handler{next: next, lim: lim, now: now}
}

// Logger is slog.New(New(l.Handler(), lim, nil)).
func Logger(l *slog.Logger, lim *Limiter) *slog.Logger {
	return slog.New(New(l.Handler(), lim, nil))
}

// Enabled reports whether the wrapped handler takes records at l.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle passes a bounded copy of r on, if the limiter admits it.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	suppressed := 0
	if h.lim != nil && r.Level >= slog.LevelInfo {
		s, ok := h.lim.Allow(h.now())
		if !ok {
			return nil
		}
		suppressed = s
	}
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(Attr(a))
		return true
	})
	if suppressed > 0 {
		out.AddAttrs(slog.Int(KeySuppressed, suppressed))
	}
	return h.next.Handle(ctx, out)
}

// WithAttrs bounds attrs and keeps the limit on the derived handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	b := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		b[i] = Attr(a)
	}
	return &Handler{next: h.next.WithAttrs(b), lim: h.lim, now: h.now}
}

// WithGroup keeps the limit on the derived handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(String(name)), lim: h.lim, now: h.now}
}

// Attr returns a with its value bounded: strings, errors and Stringers cut
// to MaxValueBytes, byte slices replaced by their length, values of other
// types (structs, maps, slices: a whole MQTT packet) by their type name,
// groups bounded member by member.
func Attr(a slog.Attr) slog.Attr {
	a.Key = String(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		b := make([]slog.Attr, len(g))
		for i, m := range g {
			b[i] = Attr(m)
		}
		a.Value = slog.GroupValue(b...)
	case slog.KindAny:
		a.Value = anyValue(v.Any())
	default:
		a.Value = v
	}
	return a
}

func anyValue(x any) slog.Value {
	switch x := x.(type) {
	case nil:
		return slog.StringValue("<nil>")
	case error:
		return slog.StringValue(String(x.Error()))
	case []byte:
		return slog.StringValue("<" + strconv.Itoa(len(x)) + " bytes>")
	case fmt.Stringer:
		return slog.StringValue(String(x.String()))
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr, float32, float64:
		return slog.AnyValue(x)
	}
	return slog.StringValue(fmt.Sprintf("<%T>", x))
}

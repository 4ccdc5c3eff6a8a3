package mqttc

import (
	"log/slog"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/rate"
)

// Each lost connection and each reconnection was a log line: behind a
// proxy that cut every connection after 1 s, an agent logged 43 KB an hour
// of the same two lines (1 MB a day; paho waits up to 30 s between
// attempts), a faster storm more. They now share a fixed-window
// quota per client: connLogLines lines per connLogWindow, the rest only
// counted, and the next line that passes says how many of each it stands
// for. Paho's own loggers (paho.ERROR and the like) are never set, so paho
// writes nothing itself.
const (
	// connLogLines is how many connection lines a client logs per
	// connLogWindow; the first losses of a storm are logged in full.
	connLogLines = 4
	// connLogWindow is the window of connLogLines: under a storm, at most
	// 24 lines an hour, each about 250 bytes (6 KB an hour).
	connLogWindow = 10 * time.Minute
)

// Log keys of the connection lines.
const (
	logKeyLostUnlogged      = "lost_unlogged"      // losses not logged since the last line
	logKeyConnectedUnlogged = "connected_unlogged" // reconnections not logged since the last line
	logKeyLostTotal         = "lost_total"         // losses since the client started
)

// connLog logs a client's losses and reconnections within its quota.
type connLog struct {
	log *slog.Logger
	win *rate.Window
	now func() time.Time

	mu              sync.Mutex // guards the counts
	lost, connected int        // not logged since the last line that was
	lostTotal       uint64
}

func newConnLog(log *slog.Logger, now func() time.Time) *connLog {
	return &connLog{log: log, win: rate.NewWindow(connLogLines, connLogWindow), now: now}
}

// lostConnection logs, or counts, a lost connection.
func (l *connLog) lostConnection(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lostTotal++
	if _, ok := l.win.Allow(l.now()); !ok {
		l.lost++
		return
	}
	l.log.Warn("mqtt connection lost; reconnecting", l.unlogged(logKeyError, err)...)
}

// connectedAgain logs, or counts, a connection made with subs subscriptions
// to restore.
func (l *connLog) connectedAgain(subs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.win.Allow(l.now()); !ok {
		l.connected++
		return
	}
	l.log.Info("mqtt connected", l.unlogged(logKeySubs, subs)...)
}

// unlogged returns args followed by the counts of the lines not logged
// since the last one (when there are any), and clears them; l.mu is held.
func (l *connLog) unlogged(args ...any) []any {
	if l.lost+l.connected > 0 {
		args = append(args, logKeyLostUnlogged, l.lost, logKeyConnectedUnlogged, l.connected, logKeyLostTotal, l.lostTotal)
		l.lost, l.connected = 0, 0
	}
	return args
}

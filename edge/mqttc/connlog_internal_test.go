package mqttc

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestConnLogCountsWhatItDoesNotLog: past its quota the connection log
// counts losses and reconnections apart, and the next line it writes says
// how many of each it stands for, and how many losses there were in all.
func TestConnLogCountsWhatItDoesNotLog(t *testing.T) {
	var logs testenv.Buffer
	now := time.Unix(1_800_000_000, 0)
	l := newConnLog(logs.Logger(slog.LevelInfo), func() time.Time { return now })
	const storm = 10 // cuts, each followed by a reconnection
	for range storm {
		l.lostConnection(errors.New("EOF"))
		l.connectedAgain(1)
		now = now.Add(time.Second)
	}
	if n := strings.Count(logs.String(), "\n"); n != connLogLines {
		t.Fatalf("%d lines in the first window, want the quota %d:\n%s", n, connLogLines, logs.String())
	}
	now = now.Add(connLogWindow)
	l.lostConnection(errors.New("EOF"))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{
		fmt.Sprintf("%s=%d", logKeyLostUnlogged, storm-connLogLines/2),
		fmt.Sprintf("%s=%d", logKeyConnectedUnlogged, storm-connLogLines/2),
		fmt.Sprintf("%s=%d", logKeyLostTotal, storm+1),
	} {
		if !strings.Contains(last, want) {
			t.Errorf("line after the storm %q lacks %s", last, want)
		}
	}
	if strings.Contains(lines[0], logKeyLostUnlogged) {
		t.Errorf("first line %q counts unlogged lines; there were none", lines[0])
	}
}

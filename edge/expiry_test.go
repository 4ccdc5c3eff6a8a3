package edge

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

func TestCommandExpiredRules(t *testing.T) {
	set := clockFloor.Add(365 * 24 * time.Hour) // a clock that has been set
	unset := time.Unix(42, 0)                   // a Pi before NTP
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	tests := []struct {
		name              string
		cmd               wire.Command
		received, now     time.Time
		expired, clockOff bool
		why               string
	}{
		{"no expiry", wire.Command{}, set, set.Add(time.Hour), false, false, ""},
		{"before expires_at", wire.Command{ExpiresAt: ms(set.Add(time.Second))}, set, set, false, false, ""},
		{"at expires_at", wire.Command{ExpiresAt: ms(set)}, set, set, false, false, ""},
		{"after expires_at", wire.Command{RequestID: "r1", ExpiresAt: ms(set)}, set, set.Add(1500 * time.Millisecond), true, false, "expired at"},
		{"expires_at wins over ttl with a set clock", wire.Command{ExpiresAt: ms(set.Add(time.Hour)), TTLMS: 10}, set, set.Add(time.Minute), false, false, ""},
		{"ttl only, set clock", wire.Command{TTLMS: 100}, set, set.Add(200 * time.Millisecond), true, false, "lifetime of 100ms"},
		{"unset clock ignores expires_at", wire.Command{ExpiresAt: ms(set)}, unset, unset.Add(time.Hour), false, true, ""},
		{"unset clock within ttl", wire.Command{ExpiresAt: ms(set), TTLMS: 5000}, unset, unset.Add(time.Second), false, true, ""},
		{"unset clock past ttl", wire.Command{ExpiresAt: ms(set), TTLMS: 5000}, unset, unset.Add(6 * time.Second), true, true, "waited 6s"},
		// Past what a time.Duration holds (292 years): it wrapped to -1ms
		// and refused the command at once, "longer than its lifetime of -1ms".
		{"ttl beyond a duration", wire.Command{TTLMS: math.MaxInt64}, set, set.Add(time.Hour), false, false, ""},
		{"ttl beyond a duration, unset clock", wire.Command{TTLMS: math.MaxInt64 / 1000}, unset, unset.Add(time.Hour), false, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, expired, clockOff := commandExpired(tt.cmd, tt.received, tt.now)
			if expired != tt.expired || clockOff != tt.clockOff {
				t.Fatalf("commandExpired = (%q, expired %v, clock unset %v), want expired %v, clock unset %v", why, expired, clockOff, tt.expired, tt.clockOff)
			}
			if !strings.Contains(why, tt.why) {
				t.Fatalf("reason %q does not mention %q", why, tt.why)
			}
		})
	}
}

// TestAgentRefusesExpiredCommands sends commands already past their
// expiry, and one that expires while it waits in the queue: each is
// answered with "expired", never run, and a tool command is audited.
func TestAgentRefusesExpiredCommands(t *testing.T) {
	dir := t.TempDir()
	p := startAgent(t, func(c *Config) { c.DataDir = dir; c.Tools.MaxConcurrent = 1 })
	past := time.Now().Add(-time.Second).UnixMilli()

	p.Send(fmt.Sprintf(`{"command":"tool","payload":{"tool":"echo_args","parameters":{"message":"late"}},"request_id":"x1","expires_at":%d}`, past))
	toolError(wire.ErrExpired)(t, p.Await("x1"))

	p.Send(fmt.Sprintf(`{"command":"ping","payload":{},"request_id":"x2","expires_at":%d}`, past))
	errorPayload(wire.ErrExpired, "expired at")(t, p.Await("x2"))

	// A fresh command still runs.
	p.Send(fmt.Sprintf(`{"command":"tool","payload":{"tool":"echo_args","parameters":{"message":"ok"}},"request_id":"x3","expires_at":%d,"ttl_ms":60000}`,
		time.Now().Add(time.Minute).UnixMilli()))
	if res, err := wire.DecodeToolResult(p.Await("x3")); err != nil || res.Status != wire.StatusSuccess {
		t.Fatalf("fresh command: %+v %v", res, err)
	}

	// x5 waits behind x4 (one worker) for longer than it may.
	p.Send(`{"command":"tool","payload":{"tool":"sleepy","parameters":{"seconds":1}},"request_id":"x4"}`)
	p.Send(fmt.Sprintf(`{"command":"tool","payload":{"tool":"echo_args","parameters":{"message":"queued"}},"request_id":"x5","expires_at":%d,"ttl_ms":300}`,
		time.Now().Add(300*time.Millisecond).UnixMilli()))
	toolError(wire.ErrExpired)(t, p.Await("x5"))

	res, err := sqlite.QueryReadOnly(context.Background(), filepath.Join(dir, "audit.db"),
		`SELECT request_id, tool, status, error_type FROM tool_calls WHERE request_id IN ('x1','x3','x5') ORDER BY request_id`)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"x1", "echo_args", "error", "expired"}, {"x3", "echo_args", "success", ""}, {"x5", "echo_args", "error", "expired"}}
	if len(res.Rows) != len(want) {
		t.Fatalf("audit rows %v, want %v", res.Rows, want)
	}
	for i, row := range res.Rows {
		for j, v := range row {
			if got := fmt.Sprint(v); got != want[i][j] && !(v == nil && want[i][j] == "") {
				t.Fatalf("audit row %d = %v, want %v", i, row, want[i])
			}
		}
	}
}

//go:build linux

package edge

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// gatedCommand is a gated bash command that creates marker, expiring
// expiresAt (Unix ms; 0: never).
func gatedCommand(id, marker string, expiresAt int64) string {
	exp := ""
	if expiresAt > 0 {
		exp = fmt.Sprintf(`,"expires_at":%d`, expiresAt)
	}
	return fmt.Sprintf(`{"command":"tool","request_id":%q%s,"payload":{"tool":"bash","parameters":{"command":"echo ran >> %s"},"start_gate":true}}`,
		id, exp, marker)
}

func startCommand(id string, run bool) string {
	return fmt.Sprintf(`{"command":"start","request_id":%q,"payload":{"run":%v}}`, id, run)
}

// TestAgentStartGate: a gated command is accepted (after its request_id is
// recorded) and runs only when told to; told not to, or told nothing
// before it expires, it answers not_started and never runs, not even when
// it is delivered again.
func TestAgentStartGate(t *testing.T) {
	ws := t.TempDir()
	p := startAgent(t, func(c *Config) {
		c.Builtin = toolbox.Builtin{Groups: []string{"coding"}, Workspace: ws}
		c.Skills.Permissions = []string{"shell"}
	})
	marker := func(id string) string { return filepath.Join(ws, id+".ran") }
	ran := func(id string) int {
		b, err := os.ReadFile(marker(id))
		if os.IsNotExist(err) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return len(b) / len("ran\n")
	}
	accepted := func(id string) {
		t.Helper()
		r := p.await(id)
		if r.ReportType != wire.ReportAccepted {
			t.Fatalf("%s: first report %s, want accepted", id, r.ReportType)
		}
		if a, err := wire.DecodeAccepted(r); err != nil || a.RequestID != id {
			t.Fatalf("%s: accepted %+v, %v", id, a, err)
		}
	}
	result := func(id string) wire.ToolResult {
		t.Helper()
		p.awaitN(id, 2)
		p.mu.Lock()
		r := p.reports[id][1]
		p.mu.Unlock()
		res, err := wire.DecodeToolResult(r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	p.send(gatedCommand("g-run", marker("g-run"), 0))
	accepted("g-run")
	if n := ran("g-run"); n != 0 {
		t.Fatalf("ran %d times before its start", n)
	}
	p.send(startCommand("g-run", true))
	if res := result("g-run"); res.Status != wire.StatusSuccess || ran("g-run") != 1 {
		t.Fatalf("told to run: %+v, ran %d times", res, ran("g-run"))
	}

	p.send(gatedCommand("g-no", marker("g-no"), 0))
	accepted("g-no")
	p.send(startCommand("g-no", false))
	if res := result("g-no"); res.ErrorType != wire.ErrNotStarted {
		t.Fatalf("told not to run: %+v", res)
	}
	// Delivered again, and told to run this time: it is answered from the
	// request log, and still never runs.
	p.send(gatedCommand("g-no", marker("g-no"), 0))
	p.awaitN("g-no", 3)
	p.send(startCommand("g-no", true))
	p.mu.Lock()
	again := p.reports["g-no"][2]
	p.mu.Unlock()
	if res, err := wire.DecodeToolResult(again); err != nil || res.ErrorType != wire.ErrNotStarted {
		t.Fatalf("redelivered: %+v, %v", res, err)
	}

	p.send(gatedCommand("g-late", marker("g-late"), time.Now().Add(1500*time.Millisecond).UnixMilli()))
	accepted("g-late")
	if res := result("g-late"); res.ErrorType != wire.ErrNotStarted {
		t.Fatalf("no start before it expired: %+v", res)
	}
	p.send(startCommand("g-late", true)) // too late: nobody waits for it

	// The stray start for g-late, and a run that follows, change nothing.
	p.send(gatedCommand("g-last", marker("g-last"), 0))
	accepted("g-last")
	p.send(startCommand("g-last", true))
	result("g-last")
	for id, want := range map[string]int{"g-run": 1, "g-no": 0, "g-late": 0, "g-last": 1} {
		if n := ran(id); n != want {
			t.Errorf("%s ran %d times, want %d", id, n, want)
		}
	}
}

package edge

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestUnrunnableCommandsStayOutOfTheRequestLog: tool commands that cannot
// run on the agent (a tool it lacks, one it may not run, arguments over
// actors.MaxArgsBytes) are answered and audited (the audit row keeps
// arguments up to maxUnrunnableParamsBytes, larger ones as their size and
// hash), but never enter the
// request log, which kept every command's arguments whole for an hour:
// 300 such commands of 500 KB grew an agent's database by 150 MB. A
// command that runs still enters it.
func TestUnrunnableCommandsStayOutOfTheRequestLog(t *testing.T) {
	dataDir := t.TempDir()
	p := startAgent(t, func(c *Config) { c.DataDir = dataDir })
	db := filepath.Join(dataDir, "audit.db")
	big := `{"message":"` + strings.Repeat("x", actors.MaxArgsBytes) + `"}`
	for i, tt := range []struct {
		name, tool, args string
		want             wire.ErrorType
	}{
		{"tool it lacks", "nosuch", `{"pad":"` + strings.Repeat("y", 100<<10) + `"}`, wire.ErrNotFound},
		{"tool not permitted", "sysinfo", `{}`, wire.ErrPermissionDenied},
		{"arguments too large", "echo_args", big, wire.ErrInvalidParams},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := "u" + strconv.Itoa(i)
			res, err := wire.DecodeToolResult(p.Ask(id, fmt.Sprintf(`{"command":"tool","request_id":%q,"payload":{"tool":%q,"parameters":%s}}`, id, tt.tool, tt.args)))
			if err != nil || res.ErrorType != tt.want {
				t.Fatalf("answered %+v (%v), want error type %s", res, err, tt.want)
			}
			if n := count(t, db, `SELECT count(*) FROM request_log WHERE request_id = '`+id+`'`); n != "0" {
				t.Fatalf("%s request log rows for %s, want none", n, id)
			}
			if n := count(t, db, fmt.Sprintf(`SELECT count(*) FROM tool_calls WHERE request_id = '%s' AND length(params) <= %d`, id, maxUnrunnableParamsBytes)); n != "1" {
				t.Fatalf("%s audited %s times with parameters within the bound, want once", id, n)
			}
		})
	}
	p.Ask("ran", `{"command":"tool","request_id":"ran","payload":{"tool":"echo_args","parameters":{"message":"hi"}}}`)
	if n := count(t, db, `SELECT count(*) FROM request_log WHERE request_id = 'ran'`); n != "1" {
		t.Fatalf("a command that ran has %s request log rows, want 1", n)
	}
}

// TestDuplicateKeysRefusedByTheAgent: a tool command whose arguments hold a
// key twice in one object is refused invalid_params before it runs, as the
// node refuses such a call of a model (actors.DuplicateKeyRefusal), and
// audited saying so. Sent straight to the agent (a hostile broker or node
// need not check), it ran: the tool took the last value ("rm -rf /srv")
// while the audit row's json_extract read the first ("ls").
func TestDuplicateKeysRefusedByTheAgent(t *testing.T) {
	dataDir := t.TempDir()
	p := startAgent(t, func(c *Config) { c.DataDir = dataDir })
	db := filepath.Join(dataDir, "audit.db")
	for i, tt := range []struct {
		name, args, key, at string
	}{
		{"top level", `{"message":"ls","message":"rm -rf /srv"}`, "message", "the arguments"},
		{"nested", `{"message":"ls","tags":[{"k":"a"},{"k":"b","k":"rm -rf /srv"}]}`, "k", "the object at .tags[1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := "dup" + strconv.Itoa(i)
			res, err := wire.DecodeToolResult(p.Ask(id, fmt.Sprintf(`{"command":"tool","request_id":%q,"payload":{"tool":"echo_args","parameters":%s}}`, id, tt.args)))
			if err != nil || res.ErrorType != wire.ErrInvalidParams || !strings.Contains(res.Error, fmt.Sprintf("%q appears twice in %s", tt.key, tt.at)) {
				t.Fatalf("answered %+v (%v), want invalid_params naming %q in %s", res, err, tt.key, tt.at)
			}
			if strings.Contains(res.Result, "rm -rf") {
				t.Fatalf("the tool ran: %q", res.Result)
			}
			row := count(t, db, `SELECT status || ' ' || error_type || ' ' || error FROM tool_calls WHERE request_id = '`+id+`'`)
			if !strings.HasPrefix(row, "error invalid_params ") || !strings.Contains(row, "appears twice") {
				t.Fatalf("audit row %q, want an invalid_params error saying the key appears twice", row)
			}
			if n := count(t, db, `SELECT count(*) FROM request_log WHERE request_id = '`+id+`'`); n != "0" {
				t.Fatalf("%s request log rows for a refused command, want none", n)
			}
		})
	}
	res, err := wire.DecodeToolResult(p.Ask("once", `{"command":"tool","request_id":"once","payload":{"tool":"echo_args","parameters":{"message":"ls","tags":[{"k":"a"},{"k":"b"}]}}}`))
	if err != nil || res.Status != wire.StatusSuccess || !strings.Contains(res.Result, `"message":"ls"`) {
		t.Fatalf("a command with each key once: %+v (%v), want it run", res, err)
	}
}

// TestRefusalsNeverStallTheAgent: commands the MQTT handler refuses itself
// (malformed, or the queue full) are answered at once, up to maxRefusals
// of them in a burst (more are dropped).
// Before, the handler published each answer and waited for the broker's
// ack, which paho reads on the goroutine that delivers commands to the
// handler: with the next command already there, each such answer waited
// for its 10 s timeout, and every command and report of the agent with it.
// Audit events of refusals and unknown commands are bounded per window.
func TestRefusalsNeverStallTheAgent(t *testing.T) {
	dataDir := t.TempDir()
	p := startAgent(t, func(c *Config) { c.DataDir, c.Tools.MaxConcurrent, c.Tools.QueueLen = dataDir, 1, 1 })
	db := filepath.Join(dataDir, "audit.db")
	// Holds the only worker: a gated command waits for its start.
	p.Ask("held", `{"command":"tool","request_id":"held","payload":{"tool":"echo_args","parameters":{"message":"hi"},"start_gate":true}}`)

	const n = 64 // the orchestrator's bound on calls in flight to one agent
	ids := make([]string, n)
	start := time.Now()
	for i := range ids {
		ids[i] = fmt.Sprintf("f%d", i)
		if i%2 == 0 {
			p.Send(fmt.Sprintf(`{"command":"ping","request_id":%q,"payload":{}}`, ids[i])) // refused busy but the first
		} else {
			p.Send(fmt.Sprintf(`{"command":7,"request_id":%q}`, ids[i])) // malformed
		}
	}
	testenv.Eventually(t, 5*time.Second, func() bool {
		answered := 0
		for _, id := range ids {
			if len(p.Reports(id)) > 0 {
				answered++
			}
		}
		return answered == n-1 // the first ping waits in the queue
	}, fmt.Sprintf("%d refused commands answered within 5 s", n-1))
	t.Logf("%d refused commands answered in %v", n-1, time.Since(start))

	p.Send(`{"command":"start","request_id":"held","payload":{"run":false}}`)
	p.AwaitN("held", 2)
	for i := range 30 {
		id := fmt.Sprintf("x%d", i)
		p.Ask(id, fmt.Sprintf(`{"command":"frobnicate","request_id":%q,"payload":{}}`, id))
	}
	for _, kind := range []string{"invalid_message", EventCommandRefused} {
		if got := count(t, db, `SELECT count(*) FROM events WHERE kind = '`+kind+`'`); got != strconv.Itoa(DefaultInvalidEventsPerWindow) {
			t.Errorf("%s %s events stored, want %d", got, kind, DefaultInvalidEventsPerWindow)
		}
	}
}

package edge

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestUnrunnableCommandsStayOutOfTheRequestLog: tool commands that cannot
// run on the agent (a tool it lacks, one it may not run, arguments over
// actors.MaxArgsBytes) are answered and audited (the audit row keeps
// arguments up to that bound), but never enter the
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
			if n := count(t, db, fmt.Sprintf(`SELECT count(*) FROM tool_calls WHERE request_id = '%s' AND length(params) <= %d`, id, actors.MaxArgsBytes)); n != "1" {
				t.Fatalf("%s audited %s times with parameters within the bound, want once", id, n)
			}
		})
	}
	p.Ask("ran", `{"command":"tool","request_id":"ran","payload":{"tool":"echo_args","parameters":{"message":"hi"}}}`)
	if n := count(t, db, `SELECT count(*) FROM request_log WHERE request_id = 'ran'`); n != "1" {
		t.Fatalf("a command that ran has %s request log rows, want 1", n)
	}
}

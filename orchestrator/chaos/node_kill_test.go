package chaos

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
)

// TestNodeKill runs node-kill against a real etcd and sqld: the owner of
// the conversation dies mid-call, its chat ends node_lost, the call runs
// once, the conversation goes on elsewhere with its history.
func TestNodeKill(t *testing.T) {
	testenv.Find(t, "etcd", "etcd-server")
	sqld, ok := sqldtest.Find()
	if !ok {
		testenv.Missing(t, t.Skipf, "sqld (libSQL server)", "run .ci/run once, or set "+SQLDEnv)
	}
	t.Setenv(SQLDEnv, sqld)
	rep := runScenario(t, "node-kill")
	v := victim(t, rep)
	if v.Outcome != OutcomeNodeLost {
		t.Fatalf("call cut by the kill ended %s", v.Outcome)
	}
	if rep.Runs != len(rep.Calls) {
		t.Fatalf("the tool ran %d times for %d calls", rep.Runs, len(rep.Calls))
	}
	mustTiming(t, rep, "node leaves the others' membership (kill to gone)")
	mustTiming(t, rep, "recovery (kill to first success on another node)")
	last := rep.Calls[len(rep.Calls)-1]
	if last.Outcome != "success" || last.History < v.N-1 {
		t.Fatalf("last call %+v: want success having seen the history before the kill (%d user messages)", last, v.N-1)
	}
}

// TestNodeKillWithoutSQLDIsNoPass: a run that stops before its checks (here
// sqld cannot start) reports ABORTED with the reason, never "every check
// passed". Before, its findings ended with the pass line above the error.
func TestNodeKillWithoutSQLDIsNoPass(t *testing.T) {
	testenv.Find(t, "etcd", "etcd-server")
	t.Setenv(SQLDEnv, filepath.Join(t.TempDir(), "no-sqld-here"))
	ctx, cancel := context.WithTimeout(context.Background(), scenarioBound)
	defer cancel()
	var out bytes.Buffer
	rep, err := Run(ctx, "node-kill", Options{Binary: evoclawBinary(t), Calls: 6, Dir: t.TempDir(), Out: &out})
	if err == nil || rep == nil {
		t.Fatalf("a run without sqld: report %v, error %v", rep, err)
	}
	out.Reset()
	rep.Write(&out)
	if strings.Contains(out.String(), "every check passed") || !strings.Contains(out.String(), "result: ABORTED before its checks ran: ") ||
		!strings.Contains(out.String(), "no-sqld-here") {
		t.Fatalf("findings of an aborted run:\n%s", out.String())
	}
}

// TestReportResultLine: the last line of the findings says pass, problems
// or an abort, and only a run with no problem that was not aborted passes.
func TestReportResultLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		rep  Report
		want string
		pass bool
	}{
		{"pass", Report{Scenario: "s"}, "result: every check passed", true},
		{"problems", Report{Scenario: "s", Problems: []string{"ran twice"}}, "PROBLEM: ran twice", false},
		{"aborted", Report{Scenario: "s", Aborted: "start sqld: no such file"}, "result: ABORTED before its checks ran: start sqld: no such file", false},
		{"aborted with problems", Report{Scenario: "s", Problems: []string{"slow"}, Aborted: "check: gone"}, "result: ABORTED before its checks ran: check: gone", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tt.rep.Write(&b)
			if !strings.Contains(b.String(), tt.want) || strings.Contains(b.String(), "every check passed") != tt.pass {
				t.Fatalf("findings:\n%s\nwant %q, pass %v", b.String(), tt.want, tt.pass)
			}
		})
	}
}

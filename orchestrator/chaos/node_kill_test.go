package chaos

import (
	"bytes"
	"context"
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*scenarioBound)
	defer cancel()
	var out bytes.Buffer
	rep, err := Run(ctx, "node-kill", Options{Binary: evoclawBinary(t), Calls: 9, Dir: t.TempDir(), Out: &out})
	if rep != nil {
		rep.Write(&out)
	}
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("%d checks failed: %s", len(rep.Problems), strings.Join(rep.Problems, "; "))
	}
	v := victim(t, rep)
	if v.Outcome != OutcomeNodeLost {
		t.Fatalf("call cut by the kill ended %s", v.Outcome)
	}
	if len(rep.RanTwice) > 0 || rep.Runs != len(rep.Calls) || rep.Joined != rep.AgentRows || rep.OrchestratorRows != len(rep.Calls)-1 {
		t.Fatalf("runs %d (twice %v) for %d calls, rows: orchestrators %d, agents %d, joined %d",
			rep.Runs, rep.RanTwice, len(rep.Calls), rep.OrchestratorRows, rep.AgentRows, rep.Joined)
	}
	mustTiming(t, rep, "node leaves the others' membership (kill to gone)")
	mustTiming(t, rep, "recovery (kill to first success on another node)")
	last := rep.Calls[len(rep.Calls)-1]
	if last.Outcome != "success" || last.History < v.N-1 {
		t.Fatalf("last call %+v: want success having seen the history before the kill (%d user messages)", last, v.N-1)
	}
}

package chaos

import (
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

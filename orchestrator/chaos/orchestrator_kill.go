package chaos

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// orchestratorKill: the orchestrator (`evoclaw chaos-node`, a child
// process with its embedded broker) is SIGKILLed while a call of a
// conversation runs on an agent, and restarted on the same data directory
// and port. The conversation must go on from its stored history, nothing
// the node acknowledged may be missing from its trail, the cut call must
// not run again, and its result, kept by the agent, must reach the new node.
func orchestratorKill(ctx context.Context, r *run) error {
	before, after := split(r.opts.Calls)
	r.conv = "chaos-talk" // one conversation: its history must survive
	nc, url, err := r.startNodeChild(ctx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	e, p, err := r.onlineEdge(ctx, "chaos-o", url)
	if err != nil {
		return err
	}
	r.say("[1/5] orchestrator pid %d (embedded broker %s), agent %s pid %d; %d calls in conversation %s", nc.p.Pid(), url, e.id, p.Pid(), before, r.conv)
	r.callN(ctx, e.id, before)

	victim, done := r.goCall(ctx, e.id, 2*victimRun)
	if err := r.waitRunning(ctx, victim); err != nil {
		return err
	}
	killed := time.Now()
	if err := nc.p.Kill(); err != nil {
		return err
	}
	r.say("[2/5] orchestrator SIGKILLed while %s runs on the agent", victim.Tag)
	<-done
	if victim.Outcome != OutcomeNodeKilled {
		r.rep.problem("%s, cut by the kill, ended %s, want %s", victim.Tag, victim.Outcome, OutcomeNodeKilled)
	}

	addr := strings.TrimPrefix(url, "tcp://")
	var nc2 *nodeChild
	if err := waitFor(ctx, 10*time.Second, "orchestrator restarted on "+addr, func() bool {
		var err error
		nc2, _, err = r.startNodeChild(ctx, addr)
		return err == nil
	}); err != nil {
		return err
	}
	up := time.Now()
	r.rep.time("orchestrator restart (kill to ready)", up.Sub(killed))
	r.say("[3/5] orchestrator restarted, pid %d, same data directory and port, after %s", nc2.p.Pid(), up.Sub(killed).Round(time.Millisecond))
	ok, err := r.untilSuccess(ctx, e.id)
	if err != nil {
		r.rep.problem("%v", err)
		return nil
	}
	r.rep.time("recovery (kill to first success)", ok.Sub(killed))
	r.rep.time("recovery (restarted node ready to first success)", ok.Sub(up))

	// The cut call's result waited in the agent's outbox while the node
	// (and its broker) was down; the new node must receive it.
	rid, err := agentRequestID(ctx, e, victim.Tag)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, "the kept report of "+victim.Tag+" delivered to the new node", func() bool {
		late, err := r.lateResults(ctx)
		return err == nil && late[rid]
	}); err != nil {
		r.rep.problem("%v", err)
	} else {
		r.rep.note("the result of %s, cut by the kill, reached the restarted node (late_result %s)", victim.Tag, rid)
	}
	r.say("[4/5] the restarted node has the cut call's result; %d more calls", after)
	r.callN(ctx, e.id, after)

	r.say("[5/5] checking the conversation's history")
	calls := r.callsAfter(up)
	for _, c := range calls {
		if c.Outcome != "success" && c.Start.After(ok) {
			r.rep.problem("%s after recovery: %s", c.Tag, c.Outcome)
		}
		// Every call adds one user message: the model must see them all.
		if c.Outcome == "success" && c.History != c.N {
			r.rep.problem("%s: the model saw %d user messages of the conversation, want %d (history lost at the restart)", c.Tag, c.History, c.N)
		}
	}
	if len(calls) > 0 && calls[len(calls)-1].History > 0 {
		r.rep.note("after the restart the model saw the whole conversation: %d user messages at the last call", calls[len(calls)-1].History)
	}
	return nil
}

// agentRequestID reads the request_id under which agent e ran tag.
func agentRequestID(ctx context.Context, e *edgeConf, tag string) (string, error) {
	var rid string
	err := waitFor(ctx, 30*time.Second, tag+" audited by agent "+e.id, func() bool {
		res, err := sqlite.QueryReadOnly(ctx, filepath.Join(e.dataDir, "audit.db"),
			`SELECT request_id FROM tool_calls WHERE json_extract(params, '$.tag') = ?`, tag)
		if err != nil || len(res.Rows) == 0 {
			return false
		}
		rid = str(res.Rows[0][0])
		return true
	})
	return rid, err
}

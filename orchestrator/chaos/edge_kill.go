package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// killedRun is how long the tool of the call cut by the kill sleeps.
const killedRun = 6.0

// edgeKill: an agent is SIGKILLed while a call runs and restarted on the
// same data directory. The cut call must end with a typed error; the
// command is then delivered again, as a broker redelivering an unacked
// QoS 1 message would, and must not run again; later calls succeed.
func edgeKill(ctx context.Context, r *run) error {
	before, after := split(r.opts.Calls)
	if err := r.startNode(ctx, ""); err != nil {
		return err
	}
	e, p, err := r.onlineEdge(ctx, "chaos-k", r.node.BrokerURL())
	if err != nil {
		return err
	}
	r.say("[1/5] orchestrator with embedded broker %s; agent %s pid %d online; %d calls", r.node.BrokerURL(), e.id, p.Pid(), before)
	r.callN(ctx, e.id, before)
	r.mu.Lock()
	finished := *r.calls[len(r.calls)-1]
	r.mu.Unlock()

	victim, done := r.goCall(ctx, e.id, killedRun)
	if err := r.waitRunning(ctx, victim); err != nil {
		return err
	}
	killed := time.Now()
	if err := p.Kill(); err != nil {
		return err
	}
	r.say("[2/5] agent SIGKILLed while %s runs (its tool sleeps %.0f s)", victim.Tag, killedRun)
	<-done
	ended := victim.Start.Add(victim.Took)
	r.rep.time("cut call ended (kill to typed error)", ended.Sub(killed))
	switch victim.Outcome {
	case string(wire.ErrAgentOffline), string(wire.ErrTimeout), string(wire.ErrInterrupted):
	default:
		r.rep.problem("%s cut by the kill ended %s, want agent_offline, timeout or interrupted", victim.Tag, victim.Outcome)
	}

	p2, err := r.startEdge(ctx, e)
	if err != nil {
		return err
	}
	r.say("[3/5] agent restarted, pid %d, same data directory", p2.Pid())
	ok, err := r.untilSuccess(ctx, e.id)
	if err != nil {
		r.rep.problem("%v", err)
		return nil
	}
	r.rep.time("recovery (kill to first success)", ok.Sub(killed))

	r.say("[4/5] redelivering the cut command and a finished one, as the broker would")
	for _, rd := range []struct {
		c    Call
		want wire.ErrorType // "" means the stored success
	}{{*victim, wire.ErrInterrupted}, {finished, ""}} {
		res, err := r.redeliver(ctx, e.id, rd.c)
		if err != nil {
			return err
		}
		switch {
		case rd.want == "" && res.Status != wire.StatusSuccess:
			r.rep.problem("redelivered finished %s answered %s %s, want its stored success", rd.c.Tag, res.Status, res.ErrorType)
		case rd.want != "" && res.ErrorType != rd.want:
			r.rep.problem("redelivered cut %s answered %q %s, want %s", rd.c.Tag, res.Status, res.ErrorType, rd.want)
		default:
			r.rep.note("redelivered %s answered %s %s without running", rd.c.Tag, res.Status, res.ErrorType)
		}
	}
	r.say("[5/5] %d more calls", after)
	r.callsAfterRecovery(ctx, e.id, after, ok)
	return nil
}

// redeliver publishes c's tool command again, with its request_id, on the
// node's broker, and returns the agent's answer.
func (r *run) redeliver(ctx context.Context, agent string, c Call) (wire.ToolResult, error) {
	rid, err := r.requestID(ctx, &c)
	if err != nil {
		return wire.ToolResult{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, CallBound)
	defer cancel()
	cl, err := mqttc.Connect(cctx, mqttc.Options{BrokerURL: r.node.BrokerURL(), ClientID: "evoclaw-chaos-redeliver"})
	if err != nil {
		return wire.ToolResult{}, fmt.Errorf("redeliver: %w", err)
	}
	defer cl.Close()
	got := make(chan wire.ToolResult, 1)
	var once sync.Once
	if err := cl.Subscribe(wire.ReportsTopic(agent), 1, func(m mqttc.Message) {
		rep, err := wire.DecodeReport(agent, m.Payload)
		if err != nil || rep.RequestID() != rid {
			return
		}
		res, err := wire.DecodeToolResult(rep)
		if err != nil {
			res = wire.ToolResult{Status: wire.StatusError, ErrorType: wire.ErrInternal, Error: err.Error()}
		}
		once.Do(func() { got <- res })
	}); err != nil {
		return wire.ToolResult{}, fmt.Errorf("redeliver: %w", err)
	}
	params, err := json.Marshal(map[string]any{"tag": c.Tag, "file": r.runLog, "seconds": c.Seconds})
	if err != nil {
		return wire.ToolResult{}, err
	}
	cmd, err := wire.NewCommand(wire.CmdTool, rid, wire.ToolPayload{Tool: markTool, Parameters: params, RequestID: rid, ConversationID: c.Conv})
	if err != nil {
		return wire.ToolResult{}, err
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return wire.ToolResult{}, err
	}
	if err := cl.Publish(cctx, mqttc.Message{Topic: wire.CommandsTopic(agent), Payload: b, QoS: 1}); err != nil {
		return wire.ToolResult{}, fmt.Errorf("redeliver: %w", err)
	}
	select {
	case res := <-got:
		return res, nil
	case <-cctx.Done():
		return wire.ToolResult{}, fmt.Errorf("redelivered %s (%s): no answer: %w", c.Tag, rid, cctx.Err())
	}
}

package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/jobs"
	"github.com/evoclaw/evoclaw/skills"
)

// sweepInterval is how often pending approvals are checked for their
// timeout.
const sweepInterval = time.Second

// startScheduler opens the jobs (config ones synced, unfinished runs of a
// previous process ended) and starts the scheduler's loop.
func (n *Node) startScheduler(ctx context.Context) error {
	s, err := jobs.New(jobs.Options{Store: n.store, Runner: n.runJob, Node: n.cfg.NodeID, Clock: jobs.ClockFunc(n.now),
		Ready: n.agentReady, Events: n.store, MaxRunning: n.cfg.Scheduler.MaxRunning, Logger: n.log.With("component", "jobs"),
		Claim: n.jobClaim(), Shared: n.sharedJobs()})
	if err != nil {
		return err
	}
	if err := s.Open(ctx, n.cfg.Jobs); err != nil {
		return err
	}
	n.sched = s
	s.Start()
	return nil
}

// startSweeper denies pending approvals whose time is up, every second,
// until Close.
func (n *Node) startSweeper() {
	n.sweepStop, n.sweepDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(n.sweepDone)
		t := time.NewTicker(sweepInterval)
		defer t.Stop()
		// A sweep that cannot record a timeout (a full disk) fails every
		// second until it can: logged once a minute.
		failures := rate.NewWindow(1, time.Minute)
		for {
			select {
			case <-n.sweepStop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), actors.DefaultAuditTimeout)
				if err := n.gate.Sweep(ctx); err != nil {
					if suppressed, ok := failures.Allow(time.Now()); ok {
						n.log.Error("sweep approvals", "err", err, "suppressed", suppressed)
					}
				}
				cancel()
			}
		}
	}()
}

// runJob carries out one job run as a conversation of this node.
func (n *Node) runJob(ctx context.Context, r jobs.Run) jobs.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "[scheduled task %q, instant %s", r.JobID, r.Scheduled.UTC().Format(time.RFC3339))
	if r.AgentID != "" {
		fmt.Fprintf(&b, ", concerning edge agent %s", r.AgentID)
	}
	b.WriteString("; nobody is watching: do the task with the tools offered and report what you found or could not do]\n")
	b.WriteString(r.Prompt)
	in := ChatInput{ConversationID: r.ConversationID, Text: b.String()}
	if r.AgentID != "" || len(r.Tools) > 0 {
		in.Toolbox = &actors.Filter{Box: n.toolbox, Allow: r.Tools, Agent: r.AgentID, Edges: n.edges}
	}
	// A run's conversation is new: its id is one run's alone, and a run
	// never runs twice. History there was written by someone else (a
	// model's sessions_send to a foreseen id): the run must not start
	// from it.
	switch planted, err := n.conversationExists(ctx, r.ConversationID); {
	case err != nil:
		return jobs.Result{Err: fmt.Errorf("check the run's conversation: %w", err)}
	case planted:
		return jobs.Result{Err: fmt.Errorf("conversation %s already has history this run did not write; refused to run from it", r.ConversationID)}
	}
	ans, err := n.Converse(ctx, in)
	res := jobs.Result{Err: err}
	if errors.Is(err, actors.ErrAskTimeout) || errors.Is(err, context.DeadlineExceeded) {
		res.TimedOut = true
	}
	if ans != nil {
		for _, c := range ans.Calls {
			res.Calls++
			if !c.Success {
				res.FailedCalls++
				if res.FirstError == "" {
					res.FirstError = c.Tool + ": " + c.Error
				}
			}
		}
	}
	return res
}

// agentReady waits, at most [scheduler] agent_wait, for an agent to be
// online with its tools listed: after a restart agents reconnect within
// seconds, and a catch-up run must not fail for that.
func (n *Node) agentReady(ctx context.Context, agentID string) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Scheduler.AgentWait.Duration)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		a, known := n.Catalog().Agents[agentID]
		if known && a.Online && !a.Listing {
			return nil
		}
		select {
		case <-ctx.Done():
			switch {
			case !known:
				return fmt.Errorf("edge agent %q is unknown to this node (not heard from within %s)", agentID, n.cfg.Scheduler.AgentWait.Duration)
			case !a.Online:
				return fmt.Errorf("edge agent %q is offline (last seen %s)", agentID, a.LastSeen.UTC().Format(time.RFC3339))
			}
			return fmt.Errorf("edge agent %q is still listing its tools", agentID)
		case <-t.C:
		}
	}
}

// agentTools lists an agent's tools for the approval gate.
func (n *Node) agentTools(agentID string) ([]wire.ToolInfo, bool) {
	a, ok := n.Catalog().Agents[agentID]
	if !ok {
		return nil, false
	}
	return a.Tools, !a.Listing && len(a.Tools) > 0
}

// publishRetained publishes a retained message (QoS 1), or clears the
// topic with an empty payload.
func (n *Node) publishRetained(ctx context.Context, topic string, payload []byte) error {
	return n.client.Publish(ctx, mqttc.Message{Topic: topic, Payload: payload, QoS: 1, Retained: true})
}

// ScheduleTaskTool is the tool that lets the model create jobs ([scheduler]
// model_tool = true).
const ScheduleTaskTool = "schedule_task"

// scheduleTool offers schedule_task: the arguments are a job definition.
func (n *Node) scheduleTool() actors.Toolbox {
	def := skills.ToolDef{Name: ScheduleTaskTool,
		Description: "Create a scheduled task that runs unattended later: a cron schedule (\"0 6 * * *\") or \"@every 1h\", " +
			"the prompt to run, and optionally the edge agents it concerns and the only tools it may use. " +
			fmt.Sprintf("Your tasks together: at most %d, running at most %d times a day (each run once per agent).", jobs.MaxModelJobs, jobs.MaxModelRunsPerDay),
		Parameters: map[string]any{"type": "object", "required": []any{"id", "schedule", "prompt"},
			"properties": map[string]any{
				"id":              map[string]any{"type": "string", "description": "name: letters, digits, - and _"},
				"schedule":        map[string]any{"type": "string", "description": "cron expression (5 fields) or @every DURATION"},
				"prompt":          map[string]any{"type": "string"},
				"agents":          map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"tools":           map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"timeout":         map[string]any{"type": "string", "description": "e.g. 10m"},
				"missed":          map[string]any{"type": "string", "enum": []any{jobs.MissedCatchUp, jobs.MissedSkip}},
				"catch_up_window": map[string]any{"type": "string"},
			}}}
	return &actors.LocalTools{List: func() []skills.ToolDef { return []skills.ToolDef{def} },
		Run: func(ctx context.Context, _ string, args json.RawMessage, _ int64) skills.Output {
			j, err := jobs.DecodeSpec(args)
			if err != nil {
				return skills.Failed(wire.ErrInvalidParams, err.Error())
			}
			in, err := n.sched.Add(ctx, j, jobs.SourceModel, "model")
			if err != nil {
				return skills.Failed(wire.ErrExecutionFailed, err.Error())
			}
			return skills.Output{Content: []skills.Block{skills.TextBlock(fmt.Sprintf("scheduled %q: next run %s", j.ID, in.Next.UTC().Format(time.RFC3339)))}}
		}}
}

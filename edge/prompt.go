package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills"
)

// promptLoop is the agent's own tool loop: the orchestrator's conversation
// actors over a toolbox of this agent's local tools. It starts on the first
// prompt, so an agent that is never prompted carries no actor system.
type promptLoop struct {
	system *actor.ActorSystem
	convs  *actors.Conversations // tools offered
	bare   *actors.Conversations // enable_tools = false
	local  actors.Toolbox        // the agent's own tools
}

var promptSeq atomic.Uint64

// loop returns the running prompt loop, starting it on first use.
func (a *Agent) loop() (*promptLoop, error) {
	a.loopOnce.Do(func() {
		sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return a.log.With("component", "prompt-actors")
		}))
		opts := func(name string, box actors.Toolbox) actors.ConvOptions {
			return actors.ConvOptions{Name: name, Provider: a.Provider, Toolbox: box, Audit: a.store, Node: a.cfg.AgentID,
				Side: persistence.SideEdge, System: a.cfg.LLM.SystemPrompt, LLMLog: a.store,
				// A completion with the chain's retries is bounded by the prompt.
				MaxIterations: a.cfg.LLM.MaxToolIterations, LLMTimeout: a.cfg.LLM.PromptTimeout.Duration,
				IdleTimeout: time.Minute, Logger: a.log.With("component", "prompt")}
		}
		l := &promptLoop{system: sys}
		var err error
		local := &actors.LocalTools{List: a.tools.Defs, Generation: a.tools.Generation, Journal: a.store,
			Run: func(ctx context.Context, name string, args json.RawMessage, timeoutMS int64) skills.Output {
				return a.runTool(ctx, wire.ToolPayload{Tool: name, Parameters: args, TimeoutMS: timeoutMS})
			}}
		l.local = local
		if l.convs, err = actors.SpawnConversations(sys.Root, opts("prompts", local)); err == nil {
			l.bare, err = actors.SpawnConversations(sys.Root, opts("prompts-no-tools", &actors.LocalTools{Off: "tools are disabled for this prompt"}))
		}
		if err != nil {
			sys.Shutdown()
			a.loopErr = err
			return
		}
		a.prompts = l
	})
	return a.prompts, a.loopErr
}

// stopLoop stops the prompt loop if it ever started.
func (a *Agent) stopLoop() {
	if l := a.prompts; l != nil {
		for _, c := range []*actors.Conversations{l.convs, l.bare} {
			_ = actors.StopAndWait(l.system.Root, c.PID, 30*time.Second)
		}
		l.system.Shutdown()
	}
}

// handlePrompt answers a prompt command with the agent's own tool loop,
// at most once per request_id like a tool command.
func (a *Agent) handlePrompt(ctx context.Context, cmd wire.Command) {
	if a.Provider == nil {
		a.failed.Add(1)
		a.replyError(ctx, cmd.RequestID, wire.ErrInvalidCommand,
			fmt.Sprintf("edge agent %q has no language model configured, so it cannot answer prompts; call its tools directly", a.cfg.AgentID))
		return
	}
	p, err := wire.DecodePromptPayload(cmd.Payload)
	if err != nil {
		a.failed.Add(1)
		a.replyError(ctx, cmd.RequestID, wire.ErrInvalidParams, err.Error())
		return
	}
	release, ok := a.claim(cmd.RequestID)
	if !ok {
		return
	}
	defer release()
	params, _ := json.Marshal(audited(p)) // a struct of plain fields always marshals
	switch a.begin(ctx, cmd.RequestID, persistence.Run{Tool: wire.CmdPrompt, Params: params}) {
	case beginAnswered:
		return
	case beginInterrupted:
		a.finishPrompt(ctx, release, cmd, p, wire.PromptResult{Status: wire.StatusError, ErrorType: wire.ErrInterrupted,
			Error: "the edge agent restarted while answering this prompt; it was not answered again (its tools may or may not have run)"}, 0)
		return
	}

	start := time.Now()
	res := a.answerPrompt(ctx, cmd.RequestID, p)
	if res.Status == wire.StatusSuccess {
		a.succeeded.Add(1)
	} else {
		a.failed.Add(1)
	}
	a.finishPrompt(ctx, release, cmd, p, res, time.Since(start))
}

// answerPrompt runs the loop and turns its answer into a prompt result.
func (a *Agent) answerPrompt(ctx context.Context, requestID string, p wire.PromptPayload) wire.PromptResult {
	l, err := a.loop()
	if err != nil {
		return wire.PromptResult{Status: wire.StatusError, ErrorType: wire.ErrInternal, Error: fmt.Sprintf("start prompt loop: %v", err)}
	}
	convs := l.convs
	if !p.EnableTools {
		convs = l.bare
	}
	timeout := a.cfg.LLM.PromptTimeout.Duration
	chat := &actors.Chat{ConversationID: fmt.Sprintf("prompt-%d", promptSeq.Add(1)), Text: p.Prompt, RequestID: requestID,
		System: p.SystemPrompt, MaxTokens: p.MaxTokens}
	if p.EnableTools && p.Delegation != nil && len(p.Delegation.Tools) > 0 {
		// Other agents' tools, through the orchestrator: the agent's own
		// come first.
		chat.Toolbox = actors.Toolboxes{l.local, a.newRemoteTools(p.Delegation)}
	}
	stop := context.AfterFunc(ctx, func() {
		l.system.Root.Send(convs.PID, &actors.Cancel{ConversationID: chat.ConversationID})
	})
	defer stop()
	v, err := actors.Ask(l.system.Root, convs.PID, chat, timeout)
	if err != nil {
		return wire.PromptResult{Status: wire.StatusError, ErrorType: wire.ErrTimeout,
			Error: fmt.Sprintf("no answer within the prompt timeout of %s", timeout)}
	}
	ans, ok := v.(*actors.Answer)
	if !ok {
		return wire.PromptResult{Status: wire.StatusError, ErrorType: wire.ErrInternal, Error: fmt.Sprintf("unexpected answer %T", v)}
	}
	res := wire.PromptResult{Status: wire.StatusSuccess, Content: ans.Text, Model: a.cfg.LLM.Model, AgentID: a.cfg.AgentID,
		ToolsExecuted: []wire.ToolExecuted{},
		Metadata:      wire.PromptMetadata{InputTokens: ans.Usage.InputTokens, OutputTokens: ans.Usage.OutputTokens}}
	if res.Model == "" {
		res.Model = a.Provider.Name()
	}
	for _, c := range ans.Calls {
		res.ToolsExecuted = append(res.ToolsExecuted, wire.ToolExecuted{Tool: c.Tool, Success: c.Success, Result: c.Result, Error: c.Error})
	}
	if ans.Err != nil {
		res.Status, res.Error, res.ErrorType = wire.StatusError, ans.Err.Error(), wire.ErrExecutionFailed
		if errors.Is(ans.Err, actors.ErrCanceled) || errors.Is(ans.Err, actors.ErrStopped) {
			res.ErrorType = wire.ErrInterrupted
		}
	}
	return res
}

// finishPrompt audits the prompt, stores its report for redelivery and
// publishes it, in that order (see finishTool).
func (a *Agent) finishPrompt(ctx context.Context, release func(), cmd wire.Command, p wire.PromptPayload, res wire.PromptResult, elapsed time.Duration) {
	res.RequestID, res.AgentID = cmd.RequestID, a.cfg.AgentID
	res.Metadata.ElapsedMS = elapsed.Milliseconds()
	if res.ToolsExecuted == nil {
		res.ToolsExecuted = []wire.ToolExecuted{}
	}
	b, err := a.encodeReport(wire.ReportResult, res)
	if err != nil {
		a.log.Error("encode report", "err", err)
		return
	}
	params, _ := json.Marshal(audited(p)) // a struct of plain fields always marshals
	rec := a.auditRow(cmd.RequestID, "", wire.CmdPrompt, params, skills.FromWire(wire.ToolResult{Status: res.Status,
		ErrorType: res.ErrorType, Error: res.Error, ElapsedMS: res.Metadata.ElapsedMS, Result: res.Content}))
	a.auditRun(ctx, rec, cmd.RequestID, b)
	release() // durable: a copy from now on is replayed this report (see claim)
	if a.beforePublish != nil {
		a.beforePublish(cmd.RequestID)
	}
	if err := a.publishReport(ctx, b); err != nil {
		a.log.Error("publish prompt result", "request_id", cmd.RequestID, "err", err)
	}
}

package edge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/proc"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// maxStderrBytes caps the stderr carried in a report.
const maxStderrBytes = 4 << 10

// claim marks a request_id as running in this process. It reports false
// for a duplicate of a request that is running now (a redelivery that
// overtook the run: the run's report answers it too). release ends the
// claim; it may be called more than once, and ends only its own claim.
// A run releases as soon as its report is durable, before publishing it:
// a copy that arrives once the report is out is then replayed that
// report, never dropped as a duplicate of a run that already answered.
func (a *Agent) claim(requestID string) (release func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, busy := a.inflight[requestID]; busy {
		a.cmdLog.Info("ignoring duplicate of a running request", "request_id", requestID)
		return nil, false
	}
	a.claims++
	n := a.claims
	a.inflight[requestID] = n
	return func() {
		a.mu.Lock()
		if a.inflight[requestID] == n {
			delete(a.inflight, requestID)
		}
		a.mu.Unlock()
	}, true
}

// What begin found about a request_id.
const (
	beginRun         = iota // new: run it
	beginAnswered           // finished before (its report was replayed) or not recordable (an error was sent)
	beginInterrupted        // started before and cut by a restart: answer, never run again
)

// begin records requestID as started in the durable request log, which
// makes a command run at most once across redeliveries and restarts.
func (a *Agent) begin(ctx context.Context, requestID string, run persistence.Run) int {
	k, err := a.store.BeginKept(ctx, requestID, run)
	if err != nil {
		// Not run: a run the audit trail cannot record must not happen.
		// The agent's own log says so too (the node only hears it in the
		// answer), within cmdLog's bound: on a full disk every command
		// comes here.
		a.failed.Add(1)
		a.cmdLog.Error("refusing command: the audit trail cannot record its run", "request_id", requestID,
			"tool", run.Tool, "data_dir", a.cfg.DataDir, "err", err)
		a.replyError(ctx, requestID, wire.ErrInternal, fmt.Sprintf("record request: %v", err))
		a.kickRecordingCheck()
		return beginAnswered
	}
	switch state := k.State; state {
	case persistence.RequestNew:
		return beginRun
	case persistence.RequestDone:
		a.cmdLog.Info("replaying stored result of a redelivered request", "request_id", requestID)
		if err := a.publishReport(ctx, k.Report); err != nil {
			a.log.Error("replay report", "request_id", requestID, "err", err)
		}
		return beginAnswered
	case persistence.RequestDropped:
		a.cmdLog.Warn("answering a redelivered request whose report was dropped for the request log's byte bound; not running it again",
			"request_id", requestID, "report_bytes", k.Stub.ReportBytes)
		if err := a.answerDropped(ctx, requestID, k.Stub); err != nil {
			a.log.Error("answer a redelivered request", "request_id", requestID, "err", err)
		}
		return beginAnswered
	case persistence.RequestRunning:
		a.failed.Add(1)
		return beginInterrupted
	}
	a.failed.Add(1)
	a.replyError(ctx, requestID, wire.ErrInternal, fmt.Sprintf("record request: unexpected state %v", k.State))
	return beginAnswered
}

// answerDropped answers a redelivered request whose report the request
// log dropped: a result with the first run's status and error type, its
// output's size and the first report's size and hash, and the same said
// in words for peers that do not know those fields (wire.Dropped).
func (a *Agent) answerDropped(ctx context.Context, requestID string, st persistence.ReportStub) error {
	d := wire.Dropped{Duplicate: true, ResultDropped: true, ReportBytes: st.ReportBytes, ReportSHA256: st.ReportSHA256}
	status, errType := st.Status, wire.ErrorType(st.ErrorType)
	if status != wire.StatusSuccess {
		status = wire.StatusError // an older row without its outcome counts as failed
		errType = cmp.Or(errType, wire.ErrInternal)
	}
	note := wire.DroppedNote(d, status, errType, st.ResultBytes)
	var report any
	if st.Tool == wire.CmdPrompt {
		p := wire.PromptResult{Status: status, ErrorType: errType, RequestID: requestID, AgentID: a.cfg.AgentID,
			ToolsExecuted: []wire.ToolExecuted{}, Dropped: d}
		if status == wire.StatusSuccess {
			p.Content = note
		} else {
			p.Error = note
		}
		report = p
	} else {
		r := wire.ToolResult{Status: status, Tool: st.Tool, RequestID: requestID, ErrorType: errType,
			ResultBytes: st.ResultBytes, Dropped: d}
		if status == wire.StatusSuccess {
			r.Result = note
		} else {
			r.Error = note
		}
		report = r
	}
	b, err := a.encodeReport(wire.ReportResult, report)
	if err != nil {
		return err
	}
	return a.publishReport(ctx, b)
}

// handleTool runs a tool command at most once per request_id; p is its
// payload as decoded when a worker took it, err the decoding's error.
func (a *Agent) handleTool(ctx context.Context, cmd wire.Command, p wire.ToolPayload, err error) {
	release, ok := a.claim(cmd.RequestID)
	if !ok {
		return
	}
	defer release()

	if err != nil {
		// Nothing can run, so there is nothing to deduplicate.
		a.failed.Add(1)
		a.finishTool(ctx, release, cmd, "", "", nil, skills.Failed(wire.ErrInvalidParams, err.Error()), false)
		return
	}
	if out := a.unrunnable(p); out != nil {
		// Nor here: nothing runs, so nothing enters the request log, and
		// its audit row keeps large arguments as their size and hash.
		a.failed.Add(1)
		params := p.Parameters
		if len(params) > maxUnrunnableParamsBytes {
			params = actors.OmittedParams(params)
		}
		a.finishTool(ctx, release, cmd, p.ConversationID, p.Tool, params, *out, false)
		return
	}
	switch a.begin(ctx, cmd.RequestID, persistence.Run{Tool: p.Tool, Params: p.Parameters, ConversationID: p.ConversationID}) {
	case beginAnswered:
		return
	case beginInterrupted:
		out := skills.Failed(wire.ErrInterrupted,
			"the edge agent restarted while this request was running; it was not run again (it may or may not have taken effect)")
		a.finishTool(ctx, release, cmd, p.ConversationID, p.Tool, p.Parameters, out, true)
		return
	}

	if p.StartGate {
		if run, why := a.awaitStart(ctx, cmd); !run {
			a.failed.Add(1)
			a.finishTool(ctx, release, cmd, p.ConversationID, p.Tool, p.Parameters, notStarted(why), true)
			return
		}
	}
	// Streaming only watches: the result below is the same with or without.
	s := a.startStream(cmd.RequestID, p.StreamOutput)
	out := a.runTool(proc.WithOnStart(s.context(ctx), actors.NoteProcess(ctx, a.store, cmd.RequestID, a.log)), p)
	s.finish()
	if out.Succeeded() {
		a.succeeded.Add(1)
	} else {
		a.failed.Add(1)
	}
	a.finishTool(ctx, release, cmd, p.ConversationID, p.Tool, p.Parameters, out, true)
}

// NewToolbox gathers what an agent with cfg offers: the tools of its skill
// directories whose permissions are all granted, the built-in groups of
// [builtin] (which replace skill tools of the same name) and, once
// Connect is called, the tools of [tools.mcp_servers] and [builtin.remote]. cfg must be
// validated; log may be nil.
func NewToolbox(cfg Config, log *slog.Logger) (*toolbox.Box, error) {
	return toolbox.New(toolbox.Config{
		SkillDirs:      cfg.Skills.Dirs,
		Permissions:    cfg.Skills.Permissions,
		DataDir:        cfg.DataDir,
		Builtin:        cfg.Builtin,
		MCPServers:     cfg.Tools.MCPServers,
		DefaultTimeout: cfg.Tools.DefaultTimeout.Duration,
		MaxTimeout:     cfg.Tools.MaxTimeout.Duration,
	}, log)
}

// maxUnrunnableParamsBytes bounds the arguments the audit row of a command
// that cannot run keeps; larger ones are kept as their size and SHA-256.
// No tool ever saw them, and kept whole (up to actors.MaxArgsBytes), 300
// commands of 200 KB for a tool the agent lacks grew its database by 51 MB
// and its private memory by 103 MB.
const maxUnrunnableParamsBytes = 4 << 10

// unrunnable is the answer to a tool command that cannot run on this agent
// whatever happens, or nil: arguments over actors.MaxArgsBytes (the
// orchestrator never sends more), a tool not offered or not permitted,
// arguments with a key twice in one object (the node refuses such a call
// before it sends it; a command from a hostile broker or node ran, the
// tool taking the last value while the audit row's json_extract read the
// first).
// Such a command is answered without entering the request log: a
// redelivery gets the same answer again anyway, and a flood of them from
// whoever can publish on the commands topic cannot make the agent keep
// their arguments on disk. It could before: every command's arguments
// were kept whole for an hour, and 300 commands of 500 KB for a tool the
// agent lacks grew its database by 150 MB and its memory by 190 MB.
func (a *Agent) unrunnable(p wire.ToolPayload) *skills.Output {
	if len(p.Parameters) > actors.MaxArgsBytes {
		out := skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("arguments of %d bytes; at most %d allowed", len(p.Parameters), actors.MaxArgsBytes))
		return &out
	}
	if out := a.notOffered(p.Tool); out != nil {
		return out
	}
	if msg := actors.DuplicateKeyRefusal(p.Tool, p.Parameters); msg != "" {
		out := skills.Failed(wire.ErrInvalidParams, msg)
		return &out
	}
	return nil
}

// notOffered is the answer to a call of tool when this agent does not
// offer it (unknown, or its permissions not granted), or nil.
func (a *Agent) notOffered(tool string) *skills.Output {
	if denied := a.tools.Denied(tool); denied != nil {
		return denied // known, but its permissions are not granted
	}
	if !a.tools.Offered(tool) {
		out := skills.Failed(wire.ErrNotFound, fmt.Sprintf("tool %q is not offered by edge agent %q; it offers %v", tool, a.cfg.AgentID, a.ToolNames()))
		return &out
	}
	return nil
}

func (a *Agent) runTool(ctx context.Context, p wire.ToolPayload) skills.Output {
	if out := a.notOffered(p.Tool); out != nil {
		return *out
	}
	// The caller's timeout wins over the tool's default, within the clamp.
	ctx = skills.WithCall(ctx, skills.Call{ConversationID: p.ConversationID})
	return a.tools.CallJSONTimeout(ctx, p.Tool, p.Parameters, p.TimeoutMS)
}

// wireResult is out as this agent reports it: stderr and the result cut to
// the configured sizes, counting what was cut.
func (a *Agent) wireResult(tool, requestID string, out skills.Output) wire.ToolResult {
	res := out.Wire(tool)
	res.RequestID = requestID
	res.Stderr = cut(res.Stderr, maxStderrBytes)
	if len(res.Result) > a.cfg.Tools.MaxResultBytes {
		if res.ResultBytes < int64(len(res.Result)) {
			res.ResultBytes = int64(len(res.Result))
		}
		res.Result = cut(res.Result, a.cfg.Tools.MaxResultBytes)
		res.Truncated = true
	}
	if !res.Truncated {
		res.ResultBytes = 0
	}
	if wire.CheckContent(res.Content) != nil {
		// Over the wire's bounds (or cut): the images stay described in
		// Result, which is what every peer reads anyway.
		res.Content = nil
	}
	return res
}

// finishTool audits the run and stores the report for redelivery (when the
// request was begun in the request log) in one transaction, then publishes
// it, so a report is sent only after its run is durable; the claim is
// released between the two (see claim). If that write
// fails the error is logged and the report still goes out: the caller has
// its result, and the orchestrator audits the call on its side.
func (a *Agent) finishTool(ctx context.Context, release func(), cmd wire.Command, conv, tool string, params json.RawMessage, out skills.Output, begun bool) {
	b, err := a.encodeReport(wire.ReportResult, a.wireResult(tool, cmd.RequestID, out))
	if err != nil {
		a.log.Error("encode report", "err", err)
		return
	}
	rec := a.auditRow(cmd.RequestID, conv, tool, params, out)
	var keep []byte // the report kept for a redelivered command
	if begun {
		keep = b
	}
	a.auditRun(ctx, rec, cmd.RequestID, keep)
	release()
	if a.beforePublish != nil {
		a.beforePublish(cmd.RequestID)
	}
	if err := a.publishReport(ctx, b); err != nil {
		a.log.Error("publish tool result", "request_id", cmd.RequestID, "err", err)
	}
}

// auditRow is this agent's audit record of a run of tool that ended with out.
func (a *Agent) auditRow(requestID, conv, tool string, params json.RawMessage, out skills.Output) persistence.ToolCall {
	return actors.AuditRow(actors.CallRef{Node: a.cfg.AgentID, Side: persistence.SideEdge, ConversationID: conv,
		RequestID: requestID, AgentID: a.cfg.AgentID, Tool: tool, Params: params}, out, time.Now())
}

// auditRun records rec; with a report, in one transaction with the report
// kept for a redelivered command, so that both exist or neither does. The
// run already happened: it is recorded even if the command's context ends.
func (a *Agent) auditRun(ctx context.Context, rec persistence.ToolCall, requestID string, report []byte) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if report != nil {
		if err := a.store.FinishToolCall(wctx, rec, requestID, report); err != nil {
			a.log.Error("audit a run and keep its result", "request_id", requestID, "tool", rec.Tool, "err", err)
		}
		return
	}
	if err := a.store.RecordToolCall(wctx, rec); err != nil {
		a.log.Error("audit a run", "request_id", requestID, "tool", rec.Tool, "err", err)
	}
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

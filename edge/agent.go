// Package edge is the edge agent: it keeps an MQTT session with the
// orchestrator's broker, advertises its capabilities and presence, runs tool
// binaries from its skills on command, and audits every run in its own
// SQLite database.
//
// # Delivery
//
// Commands arrive at least once (MQTT QoS 1). A tool command's request_id is
// recorded durably before the tool runs; a redelivered command gets the
// stored report again. A run the agent's death cut is audited as
// "interrupted" when the agent starts again, before it takes commands
// (edge/interrupted.go), and a redelivery of its command gets that error
// instead of running twice.
//
// # Concurrency
//
// The MQTT handler only enqueues into a bounded queue (a full queue is
// answered at once with an error report); MaxConcurrent workers run the
// commands, of which one tool's calls may hold all but one (edge/lanes.go). Run owns every goroutine it starts and returns after all ended.
package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/providers"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/persistence/tiers"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// Agent is a configured edge agent. Build it with New, start it with Run.
type Agent struct {
	cfg Config
	log *slog.Logger
	// cmdLog logs what commands carry: values cut, lines rate-limited
	// (edge/boundlog), so a flood of commands cannot fill the disk.
	cmdLog *slog.Logger
	// invalidEvents bounds the invalid_message events malformed and
	// unknown commands can make the agent store, refusedEvents the
	// command_refused events of a full queue (DefaultInvalidEventsPerWindow
	// each).
	invalidEvents, refusedEvents *rate.Window

	box   *toolbox.Box    // owns the MCP sessions of tools
	tools *skills.Toolset // box.Tools
	// llm stops the background work of the provider New built; nil when
	// there is none.
	llm io.Closer
	// Ready, if set, is called once the agent is connected and advertised.
	Ready func()
	// Provider is the agent's own model for prompt commands; nil refuses
	// them. New sets it from the [llm] config; tests may set it before Run.
	Provider llm.Provider

	client *mqttc.Client
	store  *sqlite.Store
	queue  chan queued
	lanes  *lanes // per-tool caps on the workers (edge/lanes.go)
	start  time.Time
	stop   context.CancelFunc
	host   string // the host name it reports (lifecycle.go); set by Run
	// refusals are the commands the MQTT handler refused, to be audited
	// and answered by sendRefusals (edge/refusals.go).
	refusals chan refusal
	// startRecorded is closed once the write of this run's agent_start
	// event has an outcome (lifecycle.go).
	startRecorded chan struct{}

	total, succeeded, failed atomic.Int64

	mu       sync.Mutex        // guards inflight and gates
	inflight map[string]uint64 // request_ids being executed now, each with its claim's number
	claims   uint64            // numbers the claims in inflight
	// gates are the gated requests waiting for their start (startgate.go).
	gates map[string]chan bool

	// waiting counts reports kept in the outbox; outboxKick wakes the
	// drain loop (edge/outbox.go).
	waiting    atomic.Int64
	outboxKick chan struct{}

	// notRec is what the online status says of the audit trail, guarded
	// by notRecMu; recordingKick asks the presence loop to check it now
	// (edge/notrecording.go); notRecordingGap, when positive, replaces
	// the constant of that name (tests).
	notRecMu        sync.Mutex
	notRec          string
	recordingKick   chan struct{}
	notRecordingGap time.Duration

	// progress sends streamed tool output; set by Run.
	progress *progressOut
	// requestLogPruneEvery replaces actors.RequestLogPruneEvery when
	// positive (tests).
	requestLogPruneEvery time.Duration
	// beforePublish, when set (tests), is called with a request_id just
	// before its report is published.
	beforePublish func(requestID string)

	loopOnce sync.Once // starts prompts
	prompts  *promptLoop
	loopErr  error

	// delegs are the calls of other agents' tools a prompt loop waits for
	// (edge/delegate.go).
	delegs delegations
}

// New loads the agent's skills and prepares it to run.
func New(cfg Config, log *slog.Logger) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("edge agent config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("agent", cfg.AgentID)
	box, err := NewToolbox(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("edge agent tools: %w", err)
	}
	a := &Agent{cfg: cfg, log: log, cmdLog: boundlog.Logger(log, boundlog.NewLimiter()),
		invalidEvents: rate.NewWindow(DefaultInvalidEventsPerWindow, DefaultInvalidEventWindow),
		refusedEvents: rate.NewWindow(DefaultInvalidEventsPerWindow, DefaultInvalidEventWindow), box: box, tools: box.Tools, inflight: map[string]uint64{}, gates: map[string]chan bool{}, outboxKick: make(chan struct{}, 1), recordingKick: make(chan struct{}, 1),
		startRecorded: make(chan struct{})}
	if cfg.LLM.Provider != "" {
		p, err := providers.New(cfg.LLM.Config, log)
		if err != nil {
			return nil, fmt.Errorf("edge agent llm: %w", err)
		}
		a.Provider = p
		a.llm, _ = p.(io.Closer)
	}
	return a, nil
}

// ToolNames lists the tools the agent offers, sorted.
func (a *Agent) ToolNames() []string { return a.tools.Names() }

// Run connects and serves commands until ctx is cancelled or a shutdown
// command arrives; then it publishes a retained offline status and returns.
func (a *Agent) Run(ctx context.Context) (err error) {
	a.start = time.Now()
	a.host = hostName()
	parent := ctx
	ctx, a.stop = context.WithCancel(ctx)
	defer a.stop()

	trail, err := tiers.Open(filepath.Join(a.cfg.DataDir, "audit.db"), sqlite.Options{Sync: a.cfg.AuditSync, Logger: a.log,
		RequestLogBytes: a.cfg.Tools.RequestLogBytes}, a.cfg.Audit, a.log.With("component", "audit"))
	if err != nil {
		return fmt.Errorf("open edge audit database: %w", err)
	}
	a.store = trail.Warm
	defer trail.Close()
	if a.store.KeyPredatesTrail() {
		a.store.NoteKeyPredatesTrail(a.cfg.AgentID, a.cfg.AgentID)
	}
	if a.llm != nil {
		// Stops the provider's capability probes and warm-up.
		defer a.llm.Close()
	}
	// The agent's start is the first record of this run; its stop the
	// last (deferred here, it runs after every step deferred later).
	a.recordStart()
	if err := trail.Start(ctx); err != nil {
		return fmt.Errorf("start edge audit trail: %w", err)
	}
	defer func() { a.recordStop(stopReason(parent, err)) }()
	if err := a.auditInterrupted(ctx); err != nil {
		return fmt.Errorf("audit runs cut by the last stop: %w", err)
	}
	// Deferred before the workers start, so the sessions close only after
	// Run has waited for every worker.
	a.box.Connect(ctx)
	defer func() {
		if err := a.box.Close(); err != nil {
			a.log.Warn("close MCP servers", "err", err)
		}
	}()

	will := a.statusMessage(wire.PresenceOffline)
	password := ""
	if a.cfg.MQTT.PasswordEnv != "" {
		password = os.Getenv(a.cfg.MQTT.PasswordEnv)
	}
	tlsConf, err := a.cfg.MQTT.TLSFiles.Config()
	if err != nil {
		return fmt.Errorf("mqtt: %w", err)
	}
	advertised := make(chan struct{}, 1)
	client, err := mqttc.Connect(ctx, mqttc.Options{
		BrokerURL: a.cfg.MQTT.Broker,
		ClientID:  "evoclaw-" + a.cfg.AgentID,
		Username:  a.cfg.MQTT.Username,
		Password:  password,
		TLSConfig: tlsConf,
		Will:      &will,
		Logger:    a.log,
		// A command over wire.MaxMessageBytes is refused anyway.
		MaxPacketBytes: wire.MaxPacketBytes,
		OnConnect: func(*mqttc.Client) {
			select {
			case advertised <- struct{}{}:
			default:
			}
			a.kickOutbox()
		},
	})
	if err != nil {
		return err
	}
	a.client = client
	defer client.Close()

	a.progress = newProgressOut(func(ctx context.Context, b []byte) error {
		// QoS 0: a chunk is worth nothing late, and nothing waits for it.
		return client.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic(a.cfg.AgentID), Payload: b})
	}, a.log.With("component", "progress"))
	a.queue = make(chan queued, a.cfg.Tools.QueueLen)
	a.refusals = make(chan refusal, maxRefusals)
	a.lanes = newLanes(a.cfg.Tools.MaxConcurrent, a.cfg.Tools.QueueLen)
	if err := client.Subscribe(wire.CommandsTopic(a.cfg.AgentID), 1, a.onMessage); err != nil {
		return fmt.Errorf("subscribe to commands: %w", err)
	}

	defer a.stopLoop()
	var wg sync.WaitGroup
	for range a.cfg.Tools.MaxConcurrent {
		wg.Go(func() { a.worker(ctx) })
	}
	wg.Go(func() { a.presence(ctx, advertised) })
	wg.Go(func() { a.drainOutbox(ctx) })
	wg.Go(func() { a.sendRefusals(ctx) })
	wg.Go(func() { actors.PruneRequestLog(ctx, a.store, a.requestLogPruneEvery, a.log) })
	wg.Go(func() { a.progress.run(ctx) })
	wg.Wait()

	// Say goodbye while the session is still up: a clean disconnect does not
	// fire the last will.
	bye, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	off := a.statusMessage(wire.PresenceOffline)
	if err := client.Publish(bye, off); err != nil {
		a.log.Warn("publish offline status", "err", err)
	}
	return nil
}

// presence advertises capabilities and online status after every
// (re)connect, and again at a heartbeat when the tools offered changed
// since (an MCP server's restart listed others), and sends heartbeats.
func (a *Agent) presence(ctx context.Context, advertised <-chan struct{}) {
	hb := time.NewTicker(a.cfg.HeartbeatInterval.Duration)
	defer hb.Stop()
	readyOnce := sync.Once{}
	var (
		gen  uint64 // of the tools last advertised
		said bool   // advertised once
	)
	rec := recordingState{gap: notRecordingGap}
	if a.notRecordingGap > 0 {
		rec.gap = a.notRecordingGap
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.recordingKick:
			if said {
				rec.check(ctx, a, time.Now())
			}
		case <-advertised:
			g := a.tools.Generation()
			// Each (re)connect's status says the trail's state now.
			a.setNotRecording(a.auditProblemNow())
			if err := a.advertise(ctx); err != nil {
				a.log.Log(ctx, unsentLevel(err), "advertise", "err", err)
				continue
			}
			gen, said = g, true
			readyOnce.Do(func() {
				if p := a.saidNotRecording(); p != "" {
					a.log.Warn("edge agent NOT READY: every command is refused until its audit trail can write",
						"broker", a.cfg.MQTT.Broker, "tools", a.ToolNames(), "data_dir", a.cfg.DataDir, "err", p)
				} else {
					a.log.Info("edge agent ready", "broker", a.cfg.MQTT.Broker, "tools", a.ToolNames())
				}
				if a.Ready != nil {
					a.Ready()
				}
			})
		case <-hb.C:
			if g := a.tools.Generation(); said && g != gen {
				if err := a.advertise(ctx); err != nil {
					a.log.Warn("advertise", "err", err)
				} else {
					gen = g
				}
			}
			if err := a.report(ctx, wire.ReportHeartbeat, a.heartbeat()); err != nil {
				a.log.Log(ctx, unsentLevel(err), "heartbeat", "err", err)
			}
			if said {
				rec.check(ctx, a, time.Now())
			}
		}
	}
}

// unsentLevel is the level of the line saying a heartbeat or an
// advertisement was not sent: debug when only because the connection is
// down, which the MQTT client logs itself within a quota (a broker
// dropping the agent again and again wrote a heartbeat warning every 30 s,
// 15 KB an hour); a warning otherwise.
func unsentLevel(err error) slog.Level {
	if errors.Is(err, mqttc.ErrNotConnected) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// advertise publishes the online status, then the capabilities. Status
// first: the node's answer to capabilities from an agent not yet online
// (a tools_list) would otherwise bring it back, and bring it online as a
// report, before its status, whose host and version the agent_online
// event records.
func (a *Agent) advertise(ctx context.Context) error {
	caps, err := json.Marshal(wire.Capabilities{AgentID: a.cfg.AgentID, Capabilities: a.capabilities()})
	if err != nil {
		return err
	}
	if err := a.client.Publish(ctx, a.statusMessage(wire.PresenceOnline)); err != nil {
		return fmt.Errorf("publish online status: %w", err)
	}
	if err := a.client.Publish(ctx, mqttc.Message{Topic: wire.CapabilitiesTopic(a.cfg.AgentID), Payload: caps, QoS: 1, Retained: true}); err != nil {
		return fmt.Errorf("publish capabilities: %w", err)
	}
	return nil
}

func (a *Agent) statusMessage(presence string) mqttc.Message {
	s := wire.Status{AgentID: a.cfg.AgentID, Status: presence}
	if presence == wire.PresenceOnline {
		s.Timestamp = time.Now().Unix()
		if !a.start.IsZero() {
			s.UptimeSeconds = int64(time.Since(a.start).Seconds())
		}
		s.MemoryMB = float64(memoryBytes()) / (1 << 20)
		s.Features = []string{wire.FeatureStartGate}
		s.Host, s.Version = wire.LooseString(a.host), wire.LooseString(wire.BoundText(a.cfg.Version, wire.MaxVersionLen))
		s.NotRecording = wire.LooseString(a.saidNotRecording())
	}
	b, _ := json.Marshal(s) // a struct of plain fields always marshals
	return mqttc.Message{Topic: wire.StatusTopic(a.cfg.AgentID), Payload: b, QoS: 1, Retained: true}
}

func (a *Agent) heartbeat() wire.Heartbeat {
	return wire.Heartbeat{
		UptimeSec:      int64(time.Since(a.start).Seconds()),
		ActionsTotal:   a.total.Load(),
		ActionsSuccess: a.succeeded.Load(),
		ActionsFailed:  a.failed.Load(),
		MemoryBytes:    int64(memoryBytes()),
		Custom:         map[string]any{"tools": len(a.tools.Names()), "go_version": runtime.Version()},
	}
}

func memoryBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Sys - ms.HeapReleased
}

// Bounds on what malformed commands can make the agent store.
const (
	// DefaultInvalidEventsPerWindow is how many invalid_message events the
	// agent stores per DefaultInvalidEventWindow; the rest are only counted
	// (the next stored one carries suppressed_before).
	DefaultInvalidEventsPerWindow = 20
	// DefaultInvalidEventWindow is the window of DefaultInvalidEventsPerWindow.
	DefaultInvalidEventWindow = time.Hour
	// invalidExcerptBytes bounds the excerpt of a malformed command kept.
	invalidExcerptBytes = 256
)

// onMessage runs on the MQTT client's goroutine: decode, then hand off.
// It never publishes (edge/refusals.go says why).
func (a *Agent) onMessage(m mqttc.Message) {
	if m.Retained {
		// Commands are never retained (docs/WIRE.md): a retained one
		// would run again at every start, and a retained shutdown would
		// be a restart loop. Not answered: whoever published it is long
		// gone, and an answer at each start would be noise.
		a.cmdLog.Warn("ignoring a command delivered retained; commands must not be retained",
			"topic", m.Topic, "bytes", len(m.Payload), "request_id", wire.SalvageRequestID(m.Payload))
		return
	}
	cmd, err := wire.DecodeCommand(m.Payload)
	if err != nil {
		a.cmdLog.Warn("rejecting malformed command", "err", err, "bytes", len(m.Payload))
		a.failed.Add(1)
		r := refusal{requestID: wire.SalvageRequestID(m.Payload), errType: wire.ErrInvalidCommand, msg: err.Error()}
		if suppressed, ok := a.invalidEvents.Allow(time.Now()); ok {
			r.event, r.detail = persistence.EventInvalidMessage, map[string]any{"topic": boundlog.String(m.Topic), "bytes": len(m.Payload),
				"error": boundlog.String(err.Error()), "suppressed_before": suppressed,
				"excerpt": boundlog.Cut(persistence.Excerpt(string(m.Payload[:min(len(m.Payload), 512)])), invalidExcerptBytes)}
		}
		if r.requestID != "" || r.event != "" {
			a.refuse(r)
		}
		return
	}
	if cmd.Command == wire.CmdStart {
		a.onStart(cmd) // never queued: the request it starts holds a worker
		return
	}
	if cmd.Command == wire.CmdDelegateResult {
		a.onDelegateResult(cmd)
		return
	}
	select {
	case a.queue <- queued{cmd: cmd, received: time.Now()}:
	default:
		a.failed.Add(1)
		a.cmdLog.Warn("refusing command: queue full", "request_id", cmd.RequestID, "queued", cap(a.queue))
		r := refusal{requestID: cmd.RequestID, errType: wire.ErrBusy,
			msg: fmt.Sprintf("edge agent %q is saturated: %d commands queued", a.cfg.AgentID, cap(a.queue))}
		if suppressed, ok := a.refusedEvents.Allow(time.Now()); ok {
			r.event, r.detail = EventCommandRefused, map[string]any{"request_id": cmd.RequestID, "command": cmd.Command,
				"error_type": wire.ErrBusy, "suppressed_before": suppressed}
		}
		a.refuse(r)
	}
}

// EventCommandRefused is the event kind of a well-formed command the agent
// did not run because its queue was full; at most
// DefaultInvalidEventsPerWindow are stored per window.
const EventCommandRefused = "command_refused"

// audit records an event about a command the agent did not run, so that
// rejections are in the audit trail and not only in a log. It waits for the
// commit (at most 10 s), so the MQTT handler never calls it (sendRefusals
// does).
func (a *Agent) audit(kind string, detail map[string]any) {
	b, err := json.Marshal(detail)
	if err != nil {
		a.log.Error("encode audit event", "kind", kind, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.store.RecordEvent(ctx, persistence.Event{Node: a.cfg.AgentID, AgentID: a.cfg.AgentID, Kind: kind, Detail: b}); err != nil {
		a.log.Error("audit event", "kind", kind, "err", err)
	}
}

func (a *Agent) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-a.queue:
			a.total.Add(1)
			a.dispatch(ctx, q)
		}
	}
}

// dispatch runs q, unless it is a call of a tool that already holds its
// share of the workers (edge/lanes.go): then it is parked for the worker
// that finishes a call of that tool, and this worker is free for others.
func (a *Agent) dispatch(ctx context.Context, q queued) {
	tool := ""
	if q.cmd.Command == wire.CmdTool {
		if q.tool, q.toolErr = wire.DecodeToolPayload(q.cmd.Payload); q.toolErr == nil {
			tool = q.tool.Tool
		}
	}
	if tool == "" {
		a.runQueued(ctx, q)
		return
	}
	switch run, parked := a.lanes.take(tool, q); {
	case parked:
		return
	case !run:
		a.failed.Add(1)
		a.log.Warn("refusing command: too many calls of one tool waiting", "request_id", q.cmd.RequestID, "tool", tool)
		a.replyError(ctx, q.cmd.RequestID, wire.ErrBusy,
			fmt.Sprintf("edge agent %q is saturated: %d commands wait for busy tools", a.cfg.AgentID, a.lanes.maxParked))
		return
	}
	for {
		a.runQueued(ctx, q)
		next, more := a.lanes.done(tool)
		if !more || ctx.Err() != nil {
			return
		}
		q = next
	}
}

// runQueued runs one command taken from the queue, unless it expired.
func (a *Agent) runQueued(ctx context.Context, q queued) {
	if why, expired := a.expired(q, time.Now()); expired {
		a.rejectExpired(ctx, q.cmd, why)
		return
	}
	a.handle(ctx, q)
}

func (a *Agent) handle(ctx context.Context, q queued) {
	cmd := q.cmd
	switch cmd.Command {
	case wire.CmdPing:
		a.succeeded.Add(1)
		a.reply(ctx, wire.ReportResult, wire.PingResult{Pong: true, RequestID: cmd.RequestID})
	case wire.CmdToolsList:
		a.succeeded.Add(1)
		a.reply(ctx, wire.ReportResult, a.toolsList(cmd.RequestID))
	case wire.CmdGetMetrics:
		a.succeeded.Add(1)
		hb := a.heartbeat()
		a.reply(ctx, wire.ReportResult, struct {
			wire.Heartbeat
			RequestID string `json:"request_id"`
		}{hb, cmd.RequestID})
	case wire.CmdTool:
		a.handleTool(ctx, cmd, q.tool, q.toolErr)
	case wire.CmdShutdown:
		a.succeeded.Add(1)
		a.cmdLog.Info("shutdown requested by the orchestrator", "request_id", cmd.RequestID)
		a.reply(ctx, wire.ReportResult, map[string]any{"status": wire.StatusSuccess, "request_id": cmd.RequestID, "result": "shutting down"})
		a.stop()
	case wire.CmdPrompt:
		a.handlePrompt(ctx, cmd)
	default:
		a.failed.Add(1)
		a.cmdLog.Warn("rejecting unknown command", "command", cmd.Command, "request_id", cmd.RequestID)
		if suppressed, ok := a.invalidEvents.Allow(time.Now()); ok {
			a.audit(persistence.EventInvalidMessage, map[string]any{"request_id": boundlog.String(cmd.RequestID), "command": boundlog.String(cmd.Command),
				"error": "unknown command", "suppressed_before": suppressed})
		}
		a.replyError(ctx, cmd.RequestID, wire.ErrInvalidCommand, "unknown command: "+cmd.Command)
	}
}

func (a *Agent) toolsList(requestID string) wire.ToolsList {
	l := wire.ToolsList{RequestID: requestID, Tools: []wire.ToolInfo{}}
	for _, d := range a.tools.Defs() {
		l.Tools = append(l.Tools, wire.ToolInfo{Name: d.Name, Description: d.Description, Parameters: d.Parameters, TimeoutMS: d.Evoclaw.TimeoutMS,
			Category: d.Evoclaw.Metadata["category"], Permissions: d.Evoclaw.Permissions, Sandboxing: d.Evoclaw.Sandboxing})
	}
	return l
}

func (a *Agent) reply(ctx context.Context, reportType string, payload any) {
	if err := a.report(ctx, reportType, payload); err != nil {
		a.log.Error("publish report", "report_type", reportType, "err", err)
	}
}

func (a *Agent) replyError(ctx context.Context, requestID string, t wire.ErrorType, msg string) {
	a.reply(ctx, wire.ReportError, wire.ErrorPayload{Error: msg, ErrorType: t, RequestID: requestID})
}

func (a *Agent) report(ctx context.Context, reportType string, payload any) error {
	b, err := a.encodeReport(reportType, payload)
	if err != nil {
		return err
	}
	if reportType == wire.ReportHeartbeat {
		return a.publishNow(ctx, b) // a heartbeat kept for later says nothing
	}
	return a.publishReport(ctx, b)
}

func (a *Agent) encodeReport(reportType string, payload any) ([]byte, error) {
	r, err := wire.NewReport(a.cfg.AgentID, a.cfg.AgentType, reportType, time.Now().Unix(), payload)
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// publishNow publishes a report, or fails.
func (a *Agent) publishNow(ctx context.Context, b []byte) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := a.client.Publish(pctx, mqttc.Message{Topic: wire.ReportsTopic(a.cfg.AgentID), Payload: b, QoS: 1})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// Shutting down: try once more without the cancelled context so a
		// finished result is not thrown away.
		bctx, bcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer bcancel()
		err = a.client.Publish(bctx, mqttc.Message{Topic: wire.ReportsTopic(a.cfg.AgentID), Payload: b, QoS: 1})
	}
	return err
}

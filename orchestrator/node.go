// Package orchestrator assembles a node: the embedded MQTT broker (unless an
// external one is configured), the MQTT session to the edge agents, the
// actor system with the edge registry and conversations, the LLM provider
// and the audit store.
package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/auditquery"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/orchestrator/internal/approvals"
	"github.com/evoclaw/evoclaw/orchestrator/jobs"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/providers"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/persistence/tiers"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/mcptools"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// stopTimeout bounds the wait for the actor trees at Close.
const stopTimeout = 30 * time.Second

// Bounds of the progress reports (streamed tool output) a node takes from
// one agent; beyond them reports are dropped and counted. They are twice
// what an evoclaw agent sends at most (edge.StreamReportsPerSecond), so
// only a misbehaving agent meets them.
const (
	ProgressReportsPerSecond = 40
	ProgressReportsBurst     = 40
	// progressMaxAgents bounds the agents whose rates are tracked at once.
	progressMaxAgents = 4096
)

// AuditFile is the audit database's file name inside a data directory.
const AuditFile = "audit.db"

// Node is a running orchestrator.
type Node struct {
	cfg    Config
	log    *slog.Logger
	broker *broker.Broker
	client *mqttc.Client
	tiers  *tiers.Tiers  // the audit trail: warm store, hot ring, retention, cold shipper
	store  *sqlite.Store // tiers.Warm
	system *actor.ActorSystem
	edges  *actors.Edges
	groups *actors.GroupToolbox // nil without [[groups]]
	convs  *actors.Conversations
	box    *toolbox.Box // the node's own tools and their MCP sessions
	http   *httpAPI     // nil when [http] is off
	// llm stops the background work (capability probes, warm-up) of a
	// provider the node built; nil when it was given one.
	llm io.Closer
	// startRecorded gets the result of the node_start event's commit.
	startRecorded chan error
	// chatSlots holds one token per chat running ([loop]
	// max_running_chats; takeChatSlot).
	chatSlots chan struct{}
	// chatBytes holds the input of the chats running (MaxRunningChatBytes;
	// takeChatBytes).
	chatBytes *semaphore.Weighted
	// chatInput bounds the input API clients' chats bring per unit of
	// time ([loop] chat_input_mb_per_hour; chatinput.go); nil: no bound.
	chatInput *inputBudget
	// stateless remembers stateless chats' transcripts so that a client
	// replaying one continues its conversation (stateless.go).
	stateless statelessChats
	// auditQuery runs a statement of POST /v1/audit/sql; auditSlots holds
	// one token per statement running.
	auditQuery   func(context.Context, auditquery.Request) (*auditquery.Result, error)
	auditSlots   chan struct{}
	auditTimeout time.Duration
	// messagesSlots holds one token per GET
	// /v1/conversations/{id}/messages reading the database; one waits at
	// most messagesWait for a token.
	messagesSlots chan struct{}
	messagesWait  time.Duration
	// metrics aggregates the tool loop's counters of every conversation.
	metrics actors.Metrics
	// progress counts streamed tool output; progressLim bounds it per agent.
	progress    actors.ProgressStats
	progressLim *rate.Keyed
	// busyLog bounds the lines logged for chats refused busy (429):
	// refusing is cheap, so a client retrying in a loop is refused
	// thousands of times a second (logChatFailure).
	busyLog *rate.Window
	// notReadyLog bounds the lines logged for chats refused before they
	// start because the node is not ready (a full disk; logChatFailure).
	notReadyLog *rate.Window
	// provider answers the loop's completions; readiness and status read
	// its links' health when it has any.
	provider llm.Provider
	// diskFree reports the free bytes of the file system holding a path
	// (a seam for tests; default statfs).
	diskFree func(path string) (uint64, error)
	// keepAlive is the silence after which a streamed answer sends an SSE
	// comment (default DefaultSSEKeepAlive).
	keepAlive  time.Duration
	httpLimits httpLimits // Options.httpLimits
	// now is the clock of readiness decisions and API timestamps.
	now func() time.Time
	// started is when Start began.
	started time.Time
	// in bounds what agents' messages cost: rate, stored events, log lines.
	in *inbound
	// toolbox is what conversations offer: the node's tools, the
	// scheduler's tool when enabled, the agents'.
	toolbox actors.Toolbox
	// gate holds tool calls that need approval; sched runs the jobs.
	gate  *approvals.Gate
	sched *jobs.Scheduler
	// sweepStop ends the approval sweeper; sweepDone is closed when it
	// has returned (nil when it never started).
	sweepStop, sweepDone chan struct{}
	// journalStop ends the work on the journal of the node's own tool
	// runs; journalDone is closed when it has returned (localruns.go).
	journalStop context.CancelFunc
	journalDone chan struct{}
	// questions wait for a person's reply; nil when the question tool is off.
	questions *questions
	// verify runs GET/POST /v1/audit/verify one at a time and keeps the
	// last result.
	verify *verifier
	// auditStatus reads GET /v1/audit/status one at a time for all its
	// callers.
	auditStatus *sharedRead[*sqlite.WarmStatus]
	// deleg runs the calls agents' own loops delegate ([delegation]).
	deleg *delegator
	// cluster is the node's membership; nil unless [cluster] is set.
	cluster *clusterNode

	closeOnce sync.Once
	closeErr  error
}

// Options carry what a config file cannot: an injected provider (tests,
// benchmarks), a logger, and where the statements of the audit API run.
type Options struct {
	Provider llm.Provider
	Logger   *slog.Logger
	// AuditQuery runs the statements of POST /v1/audit/sql; nil runs them
	// in this process (auditquery.Local). evoclaw serve runs each in a
	// child process with its own memory bound (auditquery.Runner).
	AuditQuery func(context.Context, auditquery.Request) (*auditquery.Result, error)

	// Seams for this package's tests: the free-space probe of the audit
	// file system, the SSE keep-alive interval and the clock.
	diskFree  func(path string) (uint64, error)
	keepAlive time.Duration
	now       func() time.Time
	// httpLimits: zero fields take defaultHTTPLimits (tests shorten them).
	httpLimits httpLimits
	// auditTimeout replaces AuditSQLTimeout when set.
	auditTimeout time.Duration
	// messagesWait replaces MessagesWait when set.
	messagesWait time.Duration
}

// Start brings a node up. On error everything already started is stopped.
func Start(ctx context.Context, cfg Config, o Options) (_ *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if load := cfg.LLM.LongestLoad(); cfg.Loop.ChatTimeout.Duration < load {
		log.Warn("loop.chat_timeout is shorter than llm.load_timeout: a first chat on a cold model ends at chat_timeout",
			"chat_timeout", cfg.Loop.ChatTimeout.Duration, "load_timeout", load)
	}
	n := &Node{cfg: cfg, log: log, in: newInbound(cfg.Inbound, log), diskFree: o.diskFree, keepAlive: o.keepAlive, now: o.now, httpLimits: o.httpLimits, started: time.Now(),
		progressLim: rate.NewKeyed(ProgressReportsPerSecond, ProgressReportsBurst, progressMaxAgents),
		busyLog:     rate.NewWindow(busyLogBurst, busyLogWindow),
		notReadyLog: rate.NewWindow(busyLogBurst, busyLogWindow),
		chatSlots:   make(chan struct{}, cfg.Loop.MaxRunningChats), chatBytes: semaphore.NewWeighted(MaxRunningChatBytes),
		chatInput:  newInputBudget(cfg.Loop.ChatInputMBPerHour, cfg.Loop.ChatInputBurstMB),
		auditQuery: o.AuditQuery, auditSlots: make(chan struct{}, MaxAuditSQLRunning), messagesSlots: make(chan struct{}, MessagesReading)}
	if n.auditQuery == nil {
		n.auditQuery = auditquery.Local
	}
	n.auditTimeout = cmp.Or(o.auditTimeout, AuditSQLTimeout)
	n.messagesWait = cmp.Or(o.messagesWait, MessagesWait)
	if n.now == nil {
		n.now = time.Now
	}
	n.verify = newVerifier(n.verifyWarm)
	n.auditStatus = newSharedRead(n.readAuditStatus)
	if n.diskFree == nil {
		n.diskFree = statfsFree
	}
	if n.keepAlive <= 0 {
		n.keepAlive = DefaultSSEKeepAlive
	}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()

	provider := o.Provider
	if provider == nil {
		if provider, err = providers.New(cfg.LLM, log); err != nil {
			return nil, err
		}
		n.llm, _ = provider.(io.Closer)
	}
	n.provider = provider
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	// The audit trail opens beside the broker, the MQTT session, the actor
	// system and the node's own tools, none of which uses it; everything
	// after joinAudit does. Opening it (creating the schema on a fresh
	// data directory, checking the chain's seal) is the largest step of
	// start-up. Its error comes first, as when it opened first.
	audit := make(chan error, 1)
	go func() { audit <- n.openAudit(ctx) }()
	auditJoined := false
	joinAudit := func() error {
		auditJoined = true
		return <-audit
	}
	defer func() {
		// Runs before the Close above: a failed start waits for the
		// audit trail, so that Close closes it too.
		if !auditJoined {
			if aerr := joinAudit(); aerr != nil {
				err = aerr
			}
		}
	}()

	brokerURL := cfg.Broker.URL
	username, password := cfg.Broker.Username, ""
	if cfg.Broker.PasswordEnv != "" {
		password = os.Getenv(cfg.Broker.PasswordEnv)
	}
	tlsConf, err := cfg.clientTLS()
	if err != nil {
		return nil, err
	}
	if brokerURL == "" {
		bo, self, err := cfg.embeddedBroker(log.With("component", "broker"))
		if err != nil {
			return nil, err
		}
		bo.LogLimiter = n.in.logLim
		if n.broker, err = broker.Start(bo); err != nil {
			return nil, fmt.Errorf("start embedded broker: %w", err)
		}
		brokerURL, username, password = n.broker.URL(), self.Name, self.Password
		log.Info("embedded MQTT broker listening", "addr", n.broker.Addr(), "tls_addr", n.broker.TLSAddr(), "users_file", bo.UsersFile)
	}
	// MaxPacketBytes: nothing the node reads is larger than a wire
	// message, and an external broker may not bound what agents publish
	// (mosquitto takes any size by default), so a larger packet ends the
	// session before paho allocates it, as on the agent.
	if n.client, err = mqttc.Connect(ctx, mqttc.Options{BrokerURL: brokerURL, ClientID: "evoclaw-orchestrator-" + cfg.NodeID,
		Username: username, Password: password, TLSConfig: tlsConf, Logger: log.With("component", "mqtt"),
		MaxPacketBytes: wire.MaxPacketBytes}); err != nil {
		return nil, err
	}

	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return log.With("component", "actors")
	}))
	pub := actors.PublisherFunc(func(ctx context.Context, topic string, payload []byte) error {
		return n.client.Publish(ctx, mqttc.Message{Topic: topic, Payload: payload, QoS: 1})
	})
	if n.box, err = toolbox.New(toolbox.Config{SkillDirs: cfg.Skills.Dirs, Permissions: cfg.Skills.Permissions, Builtin: cfg.Builtin, DataDir: cfg.DataDir,
		MCPServers: cfg.Tools.MCPServers, DefaultTimeout: cfg.Tools.DefaultTimeout.Duration, MaxTimeout: cfg.Tools.MaxTimeout.Duration},
		log.With("component", "tools")); err != nil {
		return nil, fmt.Errorf("orchestrator tools: %w", err)
	}
	n.box.Connect(ctx)
	if err := joinAudit(); err != nil {
		return nil, err
	}
	n.startRunJournal()
	if n.edges, err = actors.SpawnEdges(n.system.Root, actors.EdgeOptions{Publisher: pub, Logger: log.With("component", "edges"),
		LogLimiter: n.in.logLim, EventQuota: n.in.events, ExcerptBytes: n.in.excerpt,
		Events: n.store, Node: cfg.NodeID, Progress: &n.progress, AgentAddress: agentAddress(n.broker),
		HeartbeatTimeout: cfg.Loop.HeartbeatTimeout.Duration,
		ForgetAfter:      cfg.Loop.AgentForgetAfter.Duration, MaxAgents: cfg.Loop.MaxAgents}); err != nil {
		return nil, err
	}
	tools := n.box.Tools
	local := &actors.LocalTools{List: tools.Defs, Denied: tools.Denied, Generation: tools.Generation, Journal: n.store,
		Run: func(ctx context.Context, name string, args json.RawMessage, timeoutMS int64) skills.Output {
			return tools.CallJSONTimeout(ctx, name, args, timeoutMS)
		}}
	if n.gate, err = approvals.New(cfg.Approvals, approvals.Options{Store: n.store, Node: cfg.NodeID, Now: n.now,
		Tools: n.agentTools, Publish: n.publishRetained, Logger: log.With("component", "approvals")}); err != nil {
		return nil, err
	}
	if err := n.gate.Open(ctx); err != nil {
		return nil, err
	}
	boxes := actors.Toolboxes{local}
	if cfg.Scheduler.ModelTool {
		boxes = append(boxes, n.scheduleTool())
	}
	boxes = n.sessionBoxes(boxes)
	local.Reserved, local.Withheld = reservedNames(boxes[1:], cfg.Tools.MCPServers, log.With("component", "tools"))
	// The node's own tools first; a name no local tool has goes to the agents.
	if len(cfg.Groups) > 0 {
		// Before the agents' own tools: a group's name is not an agent's.
		n.groups = &actors.GroupToolbox{Edges: n.edges, Groups: actorGroups(cfg.Groups), Logger: log.With("component", "groups")}
		boxes = append(boxes, n.groups)
	}
	n.deleg = newDelegator(cfg.Delegation, n)
	edgeBox := &actors.EdgeToolbox{Edges: n.edges, Mode: cfg.Loop.Tools, Select: cfg.Loop.Select}
	if n.deleg.enabled() {
		edgeBox.Delegation = n.deleg.offerChat
	}
	n.toolbox = append(boxes, edgeBox)
	var gate actors.Approver
	if n.gate.Enabled() {
		gate = n.gate
	}
	rules := map[string]actors.TimeoutRule{}
	for cat, tc := range cfg.Loop.Timeouts {
		rules[cat] = actors.TimeoutRule{Default: tc.Default.Duration, Max: tc.Max.Duration}
	}
	hist, err := n.conversationHistory()
	if err != nil {
		return nil, err
	}
	if n.convs, err = actors.SpawnConversations(n.system.Root, actors.ConvOptions{
		Provider: provider, Edges: n.edges, Audit: n.store, LLMLog: n.store, History: hist, Metrics: &n.metrics,
		Toolbox: n.toolbox, Approvals: gate,
		Node: cfg.NodeID, System: cfg.LLM.SystemPrompt, RequestTag: n.requestTag(),
		MaxIterations: cfg.Loop.MaxToolIterations, ToolErrorLimit: cfg.Loop.ToolErrorLimit,
		MaxIdenticalCalls: cfg.Loop.MaxIdenticalCalls, OnLimit: cfg.Loop.OnLimit, MaxParallel: cfg.Loop.MaxParallelTools,
		// [llm] timeout bounds one attempt inside the provider chain; a
		// completion with its retries and fallbacks is bounded by the chat.
		TimeoutRules: rules, LLMTimeout: cfg.Loop.ChatTimeout.Duration, Logger: log.With("component", "conversations"),
		DormantAfter: cfg.Loop.DormantAfter.Duration, MaxDormantBytes: cfg.Loop.DormantMemoryMB << 20,
	}); err != nil {
		return nil, err
	}
	if err := n.startCluster(); err != nil {
		return nil, err
	}
	if err := n.startScheduler(ctx); err != nil {
		return nil, err
	}
	n.startSweeper()
	n.awaitStartEvent()
	if cfg.HTTP.enabled() {
		if err := n.startHTTP(); err != nil {
			return nil, err
		}
	}
	if err := n.subscribeAgents(); err != nil {
		return nil, err
	}
	return n, nil
}

// openAudit opens and starts the audit trail and records the node's start.
func (n *Node) openAudit(ctx context.Context) error {
	t, err := tiers.Open(filepath.Join(n.cfg.DataDir, AuditFile), sqlite.Options{Sync: n.cfg.AuditSync, Logger: n.log},
		n.cfg.Audit, n.log.With("component", "audit"))
	if err != nil {
		return fmt.Errorf("open audit trail: %w", err)
	}
	n.tiers, n.store = t, t.Warm
	// A new trail beside an old key: its first record says the earlier
	// trail is missing.
	if n.store.KeyPredatesTrail() {
		n.store.NoteKeyPredatesTrail(n.cfg.NodeID, "")
	}
	// The node's start is the first record of this run: queued before
	// retention's first pass and whatever the rest of start-up writes
	// (approvals a restart denies, jobs), which commit no earlier. Its
	// commit (the disk's) overlaps the rest of start-up; Start waits for
	// it before it serves HTTP.
	started := make(chan error, 1)
	n.startRecorded = started
	b, _ := json.Marshal(map[string]any{"version": n.cfg.Version}) // a string
	if err := n.store.QueueEvent(persistence.Event{Node: n.cfg.NodeID, Kind: persistence.EventNodeStart, Detail: b},
		func(err error) { started <- err }); err != nil {
		started <- err
	}
	if err := t.Start(ctx); err != nil {
		return fmt.Errorf("start audit trail: %w", err)
	}
	return nil
}

// awaitStartEvent waits for the commit of the node_start event openAudit
// queued, as long as a waited event would, and logs its failure.
func (n *Node) awaitStartEvent() {
	t := time.NewTimer(actors.DefaultAuditTimeout)
	defer t.Stop()
	var err error
	select {
	case err = <-n.startRecorded:
	case <-t.C:
		err = context.DeadlineExceeded
	}
	if err != nil {
		n.log.Error("audit event", "kind", persistence.EventNodeStart, "err", err)
	}
}

// subscribeAgents subscribes to what agents publish, the three
// subscriptions in flight at once (each waits for the broker's SUBACK).
func (n *Node) subscribeAgents() error {
	kinds := []string{wire.KindReports, wire.KindStatus, wire.KindCapabilities}
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, kind := range kinds {
		wg.Go(func() {
			if err := n.client.Subscribe(n.agentFilter(kind), 1, n.onMessage); err != nil {
				errs[i] = fmt.Errorf("subscribe to agent %s: %w", kind, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// HTTPAddr is the HTTP API's address, or "" when it is off.
func (n *Node) HTTPAddr() string {
	if n.http == nil {
		return ""
	}
	return n.http.ln.Addr().String()
}

// BrokerURL is the URL edge agents should connect to.
func (n *Node) BrokerURL() string {
	if n.broker != nil {
		return n.broker.URL()
	}
	return n.cfg.Broker.URL
}

// AuditPath is the node's audit database file.
func (n *Node) AuditPath() string { return filepath.Join(n.cfg.DataDir, AuditFile) }

// ProgressStats returns the counters of streamed tool output.
func (n *Node) ProgressStats() *actors.ProgressStats { return &n.progress }

// Metrics returns the tool loop's counters.
func (n *Node) Metrics() actors.MetricsSnapshot { return n.metrics.Snapshot() }

// Catalog returns the known agents and their tools.
func (n *Node) Catalog() *actors.Catalog { return n.edges.Catalog() }

// errRetainedReport drops a report a broker kept (retained). A report
// answers a call waiting now; kept by a broker that cannot refuse it
// (mosquitto's ACL cannot tell a retained publish), one came back at every
// start of the node's session as a late result, and made an agent long
// gone look online until its heartbeat timeout. The embedded broker
// refuses it (docs/WIRE.md).
var errRetainedReport = errors.New("report delivered retained; reports are never retained")

// onMessage runs on the MQTT client's goroutine: decode and hand to the
// edge registry, whose bounded mailbox pushes back when it is full.
func (n *Node) onMessage(m mqttc.Message) {
	agentID, kind, err := wire.ParseTopic(m.Topic)
	if err == nil {
		err = wire.ValidateToolPrefix(agentID)
	}
	if err != nil {
		n.in.log.Warn("dropping message on unexpected topic", "topic", m.Topic, "err", err)
		return
	}
	if !n.in.admit(agentID, len(m.Payload)) {
		return
	}
	var msg any
	switch kind {
	case wire.KindReports:
		if m.Retained {
			n.dropped(agentID, kind, m.Payload, errRetainedReport)
			return
		}
		r, err := wire.DecodeReport(agentID, m.Payload)
		payload := m.Payload
		if err != nil {
			n.dropped(agentID, kind, m.Payload, err)
			// A result too deep (or otherwise unreadable) still ends the
			// call it names, at once, as failed: its waiter must not sit
			// out its timeout (docs/WIRE.md).
			var ok bool
			if r, ok = wire.SalvageReport(agentID, m.Payload, err); !ok {
				return
			}
			if payload, err = json.Marshal(r); err != nil {
				return
			}
		}
		if !n.relayReport(agentID, r, payload) {
			n.takeReport(agentID, r)
		}
		return
	case wire.KindStatus:
		if len(m.Payload) == 0 {
			return // a cleared retained message
		}
		s, err := wire.DecodeStatus(agentID, m.Payload)
		if err != nil {
			n.dropped(agentID, kind, m.Payload, err)
			return
		}
		msg = &actors.StatusIn{AgentID: agentID, Status: s}
	case wire.KindCapabilities:
		if len(m.Payload) == 0 {
			return
		}
		c, err := wire.DecodeCapabilities(agentID, m.Payload)
		if err != nil {
			n.dropped(agentID, kind, m.Payload, err)
			return
		}
		msg = &actors.CapabilitiesIn{AgentID: agentID, Capabilities: c.Capabilities}
	default:
		return
	}
	n.system.Root.Send(n.edges.PID, msg)
}

// takeReport hands a decoded report to this node's actors (or, a
// delegate request, to the delegator).
func (n *Node) takeReport(agentID string, r wire.Report) {
	if r.ReportType == wire.ReportDelegate {
		n.deleg.receive(agentID, r) // never reaches the actors
		return
	}
	if r.ReportType == wire.ReportProgress && !n.progressLim.Allow(agentID, time.Now()) {
		// Dropped before the actors, whose bounded mailboxes carry
		// results too: counted, not logged, not audited.
		n.progress.RateLimited.Add(1)
		return
	}
	n.system.Root.Send(n.edges.PID, &actors.ReportIn{AgentID: agentID, Report: r})
}

// dropped logs and audits a malformed message from an agent, within its
// quota (inbound.go); it never reaches the actors.
func (n *Node) dropped(agentID, kind string, payload []byte, err error) {
	ev, ok := n.in.invalidMessage(n.cfg.NodeID, agentID, kind, payload, err)
	if !ok {
		return
	}
	go n.recordEvent(ev) // off the MQTT client's goroutine; the quota bounds how many
}

// recordEvent stores ev, waiting for its commit.
func (n *Node) recordEvent(ev persistence.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), actors.DefaultAuditTimeout)
	defer cancel()
	if err := n.store.RecordEvent(ctx, ev); err != nil {
		n.log.Error("audit event", "kind", ev.Kind, "err", err)
	}
}

// AuditStatus reports retention and cold-tier shipping of the audit trail.
func (n *Node) AuditStatus() tiers.Status { return n.tiers.Status() }

// ErrTooManyChats refuses a chat that found every slot of [loop]
// max_running_chats taken for as long as it could wait. The HTTP API
// answers 429 with Retry-After.
var ErrTooManyChats = errors.New("too many chats running")

// takeChatSlot takes one of the node's chat slots, waiting up to timeout
// or until ctx ends for one to free, and says how long it waited. Chats
// beyond the bound wait here instead of all running at once: each running
// chat holds model and tool calls and queues audit writes, and a burst of
// them would overflow the audit writer's bounded queue and fail chats
// half-way.
func (n *Node) takeChatSlot(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	select {
	case n.chatSlots <- struct{}{}:
		return 0, nil
	default:
	}
	start := time.Now()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case n.chatSlots <- struct{}{}:
		return time.Since(start), nil
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, fmt.Errorf("waiting for one of %d running chats to end: %w", cap(n.chatSlots), ctx.Err())
		}
		// The caller's deadline is this wait's timeout too: the same answer
		// whichever of the two fires first.
	case <-t.C:
	}
	return 0, fmt.Errorf("%w: %d, and none ended within %s", ErrTooManyChats, cap(n.chatSlots), timeout.Round(time.Millisecond))
}

// Chat sends one user message to a conversation and waits for its answer.
func (n *Node) Chat(ctx context.Context, conversationID, text string) (*actors.Answer, error) {
	return n.Converse(ctx, ChatInput{ConversationID: conversationID, Text: text})
}

// ChatInput is one user message to a conversation, with what a client may
// add to it.
type ChatInput struct {
	ConversationID string
	Text           string
	// System replaces the node's system prompt for this message.
	System string
	// Seed is the history to start a new conversation from (see
	// actors.Chat.Seed).
	Seed []llm.Message
	// MaxTokens bounds each completion when positive.
	MaxTokens int
	// Sampling are the client's sampling hints, sent with each completion.
	Sampling llm.Sampling
	// Progress receives the chat's steps as they happen; it must not block.
	Progress actors.ProgressFunc
	// Toolbox, when set, replaces the node's toolbox for this chat (a
	// job's filter of it); the approval gate applies all the same.
	Toolbox actors.Toolbox
	// Person, MaxIterations, Parent, Depth and Spawns are those of
	// actors.Chat. A chat that is not spawned (Depth 0) without Spawns
	// gets a budget of [loop] max_spawns_per_message.
	Person        bool
	MaxIterations int
	Parent        string
	Depth         int
	Spawns        *actors.SpawnBudget
	// Client is the API client that sent the chat, recorded as a
	// chat_received event when the chat is let in; nil for chats the node
	// starts itself (jobs, sub-agents, sends).
	Client *ChatClient
	// local runs the chat on this node even in a cluster: it was
	// forwarded here by the conversation's grain.
	local bool
	// fresh: the node made ConversationID for this chat with
	// newConversationID (actors.Chat.Fresh).
	fresh bool
}

// ErrConversationID is a missing or malformed conversation id.
var ErrConversationID = errors.New("conversation id")

// notStarted is why a chat was refused before it reached its conversation
// (no model, the audit trail cannot write, no chat slot): nothing of it
// was stored, and an id the node made for it names no conversation.
type notStarted struct{ error }

func (e notStarted) Unwrap() error { return e.error }

// refusedBeforeStart reports whether err refused its chat before it
// started, on this node or on the node that owns the conversation.
func refusedBeforeStart(err error) bool {
	var ns notStarted
	var re *RemoteChatError
	return errors.As(err, &ns) || errors.As(err, &re) && re.NotStarted
}

// Converse sends in to its conversation and waits for the answer. A caller
// that gives up (ctx ends) cancels the chat. The error is the answer's
// error, or why there is no answer (actors.ErrAskTimeout when the node's
// chat timeout passed). A chat of the HTTP API cut because the node is
// stopping fails with ErrNodeStopping, not as one its client gave up.
func (n *Node) Converse(ctx context.Context, in ChatInput) (ans *actors.Answer, err error) {
	defer func() { err = stoppingErr(ctx, err) }()
	if in.ConversationID == "" {
		return nil, fmt.Errorf("%w: required (letters, digits, - and _; at most 48)", ErrConversationID)
	}
	if wire.ValidateAgentID(in.ConversationID) != nil {
		return nil, fmt.Errorf("%w %.60q: use letters, digits, '-' and '_', at most %d characters",
			ErrConversationID, in.ConversationID, wire.MaxAgentIDLen)
	}
	if n.cluster != nil && n.cluster.c != nil && routable(in) {
		if ans, err, forwarded := n.converseCluster(ctx, in); forwarded {
			return ans, err
		}
	}
	if err := n.modelGate(); err != nil {
		return nil, notStarted{fmt.Errorf("chat %s: %w", in.ConversationID, err)}
	}
	if err := n.auditGate(); err != nil {
		return nil, notStarted{fmt.Errorf("chat %s: %w", in.ConversationID, err)}
	}
	if err := n.llmGate(); err != nil {
		return nil, notStarted{fmt.Errorf("chat %s: %w", in.ConversationID, err)}
	}
	timeout := n.cfg.Loop.ChatTimeout.Duration
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if in.Parent == "" {
		// A sub-agent's chat or a send runs within its parent's slot: a
		// parent waiting on a child that waits for a slot would hold its
		// own until its deadline.
		waited, err := n.takeChatSlot(ctx, timeout)
		if err != nil {
			return nil, notStarted{fmt.Errorf("chat %s: %w", in.ConversationID, err)}
		}
		defer func() { <-n.chatSlots }()
		timeout -= waited
		waited, release, err := n.takeChatBytes(ctx, in, timeout)
		if err != nil {
			return nil, notStarted{fmt.Errorf("chat %s: %w", in.ConversationID, err)}
		}
		defer release()
		timeout -= waited
		// Last of the bounds, so that a chat refused by another one
		// takes none of the budget; before anything of it is stored.
		if err := n.takeChatInput(in); err != nil {
			return nil, notStarted{fmt.Errorf("chat %s: %w", in.ConversationID, err)}
		}
	}
	// A caller that gives up cancels the chat: its LLM call and tool calls
	// stop instead of running on for nobody.
	// Cancels name this chat: a conversation may run another client's chat
	// while this one waits in its queue.
	if in.Spawns == nil && in.Depth == 0 {
		in.Spawns = actors.NewSpawnBudget(cmp.Or(n.cfg.Loop.MaxSpawnsPerMessage, DefaultMaxSpawnsPerMessage))
	}
	wait := &actors.QueueWait{}
	chat := &actors.Chat{ConversationID: in.ConversationID, Text: in.Text,
		System: in.System, Seed: in.Seed, MaxTokens: in.MaxTokens, Sampling: in.Sampling, Progress: in.Progress, Toolbox: in.Toolbox,
		Person: in.Person, MaxIterations: in.MaxIterations, Parent: in.Parent, Depth: in.Depth, Fresh: in.fresh, Spawns: in.Spawns,
		Wait: wait}
	n.recordChatReceived(in)
	cancel := &actors.Cancel{ConversationID: in.ConversationID, Chat: chat}
	stop := context.AfterFunc(ctx, func() { n.system.Root.Send(n.convs.PID, cancel) })
	defer stop()
	res, err := actors.Ask(n.system.Root, n.convs.PID, chat, timeout)
	if err != nil {
		// Nobody waits for this chat any more: stop its LLM and tool calls.
		n.system.Root.Send(n.convs.PID, cancel)
		return nil, noAnswer(in.ConversationID, timeout, wait, err)
	}
	ans, ok := res.(*actors.Answer)
	if !ok {
		return nil, fmt.Errorf("chat %s: unexpected reply %T", in.ConversationID, res)
	}
	if ans.Err != nil {
		return ans, ans.Err
	}
	return ans, nil
}

// WaitForAgents blocks until at least n agents are online with their tools
// listed, or ctx ends.
func (n *Node) WaitForAgents(ctx context.Context, count int) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		ready := 0
		for _, a := range n.Catalog().Online() {
			if len(a.Tools) > 0 {
				ready++
			}
		}
		if ready >= count {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %d edge agents (have %d ready): %w", count, ready, ctx.Err())
		case <-t.C:
		}
	}
}

// Close stops the node: actors, MQTT session, broker, audit store. It is
// idempotent and returns when everything has stopped.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if n.http != nil {
			errs = append(errs, n.http.close())
		}
		if n.sched != nil {
			n.sched.Stop() // its runs are chats: before the conversations stop
		}
		if n.sweepDone != nil {
			close(n.sweepStop)
			<-n.sweepDone
		}
		n.verify.close()
		n.auditStatus.close()
		if n.deleg != nil {
			n.deleg.close() // its calls end before the actors and the store they use
		}
		if n.system != nil {
			if n.convs != nil {
				_ = actors.StopAndWait(n.system.Root, n.convs.PID, stopTimeout)
			}
			if n.edges != nil {
				_ = actors.StopAndWait(n.system.Root, n.edges.PID, stopTimeout)
			}
			n.shutdownActors()
		}
		if n.client != nil {
			n.client.Close()
		}
		if n.broker != nil {
			errs = append(errs, n.broker.Close())
		}
		if n.box != nil {
			errs = append(errs, n.box.Close())
		}
		if n.llm != nil {
			errs = append(errs, n.llm.Close())
		}
		n.stopRunJournal()
		if n.tiers != nil {
			n.recordEvent(persistence.Event{Node: n.cfg.NodeID, Kind: persistence.EventNodeStop})
			errs = append(errs, n.tiers.Close())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// reservedNames withholds from the node's own skills, built-ins and MCP
// tools the names the node keeps for other tools: edge_call, the tools of
// the node's other boxes (own: the scheduler's and the sessions' tools)
// and every AGENT__TOOL or GROUP__TOOL name. Without it a skill named
// "edge_call" or "pi-kitchen__sysinfo" came first and took every such
// call. An MCP tool's name is SERVER__TOOL: it is kept when SERVER is one
// of the configured servers (the operator's choice of name). reserved is
// the test (called for every name a call asks for); withheld logs a local
// tool it withheld, once per name.
func reservedNames(own actors.Toolboxes, mcp map[string]mcptools.ServerConfig, log *slog.Logger) (reserved func(string) bool, withheld func(string)) {
	names := map[string]bool{actors.EdgeCallTool: true}
	for _, d := range own.Defs() {
		names[d.Name] = true
	}
	reserved = func(name string) bool {
		if names[name] {
			return true
		}
		prefix, _, ok := strings.Cut(name, actors.ToolSep)
		if !ok {
			return false
		}
		_, isMCP := mcp[prefix]
		return !isMCP
	}
	var warned sync.Map
	withheld = func(name string) {
		if _, seen := warned.LoadOrStore(name, true); !seen {
			log.Warn("a local tool's name is reserved for the node's own tools and agents' tools: not offered", "tool", name)
		}
	}
	return reserved, withheld
}

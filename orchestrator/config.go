package orchestrator

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/tomlconf"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/cluster"
	"github.com/evoclaw/evoclaw/orchestrator/internal/approvals"
	"github.com/evoclaw/evoclaw/orchestrator/jobs"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/tiers"
	"github.com/evoclaw/evoclaw/skills/mcptools"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// Defaults of Config.
const (
	DefaultNodeID       = "orchestrator"
	DefaultDataDir      = "evoclaw-data"
	DefaultBrokerListen = "127.0.0.1:1883"
	DefaultChatTimeout  = 10 * time.Minute
	// DefaultChatAfterLoad is what a chat has by default beyond the
	// chain's longest load_timeout: a first chat on a cold local model
	// (load_timeout 15m, for a small board reading weights from an SD
	// card) is bounded by that, not cut at 10 minutes by its own default.
	DefaultChatAfterLoad = 5 * time.Minute
	// DefaultMaxRunningChats bounds the chats a node runs at once.
	DefaultMaxRunningChats = 512
	// maxDormantMemoryMB bounds [loop] dormant_memory_mb (its bytes fit a
	// 32-bit int).
	maxDormantMemoryMB = 1024
	DefaultAgentWait   = 30 * time.Second
	// MaxApprovalParamsBytes bounds the arguments of a call put to a
	// person, kept and shown whole; a call with longer ones is refused
	// without asking.
	MaxApprovalParamsBytes = approvals.MaxParamsBytes
)

// Config is a node's configuration, read from evoclaw.toml. The zero value
// plus Validate is a working loopback-only node.
type Config struct {
	NodeID  string `toml:"node_id"`
	DataDir string `toml:"data_dir"`
	// AuditSync is "normal" (default: WAL, survives a process crash) or
	// "full" (fsync every commit: survives a power cut).
	AuditSync string     `toml:"audit_sync"`
	Broker    BrokerConf `toml:"broker"`
	// LLM is the model provider chain (docs/LLM.md).
	LLM  llm.Config `toml:"llm"`
	Loop LoopConf   `toml:"loop"`
	// HTTP is the node's own API (health, status, logs, chat).
	HTTP HTTPConf `toml:"http"`
	// Audit configures the audit trail's hot ring, warm retention and cold
	// tier (docs/AUDIT.md).
	Audit tiers.Config `toml:"audit"`
	// Inbound bounds what agents' messages may cost the node (inbound.go).
	Inbound InboundConf `toml:"inbound"`
	// Version is the binary's version, recorded in the node_start event;
	// set by the command, not the file.
	Version string `toml:"-"`
	// Skills, Builtin and Tools are the orchestrator's own tools, run in
	// its process beside the edge agents' (the keys of agent.toml).
	Skills  SkillsConf      `toml:"skills"`
	Builtin toolbox.Builtin `toml:"builtin"`
	Tools   ToolsConf       `toml:"tools"`
	// Jobs are the scheduled tasks declared in the file ([[jobs]]).
	Jobs []jobs.Spec `toml:"jobs"`
	// Scheduler tunes the scheduler of jobs.
	Scheduler SchedulerConf `toml:"scheduler"`
	// Approvals names the tool calls that wait for a person's decision.
	Approvals approvals.Config `toml:"approvals"`
	// Groups are edge agents called as one ([[groups]], groups.go).
	Groups []GroupConf `toml:"groups"`
	// Delegation lets edge agents' own loops use other agents' tools
	// through the node (delegation.go); off unless it has rules.
	Delegation DelegationConf `toml:"delegation"`
	// Cluster joins this node to others (docs/CLUSTER.md); off when it
	// names no etcd endpoint.
	Cluster cluster.Config `toml:"cluster"`
}

// SchedulerConf is the [scheduler] section.
type SchedulerConf struct {
	// ModelTool offers the model a schedule_task tool that creates jobs
	// (source "model"). Off by default: a job runs later, unattended.
	ModelTool bool `toml:"model_tool"`
	// MaxRunning bounds job runs at once (default jobs.DefaultMaxRunning).
	MaxRunning int `toml:"max_running"`
	// AgentWait is how long a run waits for its agent to come online
	// before it fails (default 30s): after a restart, agents reconnect.
	AgentWait Duration `toml:"agent_wait"`
}

// BrokerConf selects the embedded broker or an external one.
type BrokerConf struct {
	// URL of an external broker (tcp://host:1883, tls://host:8883). Empty
	// means: run the embedded broker.
	URL string `toml:"url"`
	// Listen is the embedded broker's address (default 127.0.0.1:1883).
	Listen string `toml:"listen"`
	// Username and PasswordEnv are this node's credentials on an external
	// broker. The embedded broker gives the node a credential of its own.
	Username    string `toml:"username"`
	PasswordEnv string `toml:"password_env"`
	// TLSFiles (ca_file, cert_file, key_file, insecure_skip_verify) are the
	// node's TLS client settings for an external tls:// broker.
	mqttc.TLSFiles
	// Embedded broker access control and TLS (broker_security.go).
	BrokerSecurity
}

// SkillsConf says where the node's own skill tools come from.
type SkillsConf struct {
	// Dirs are directories whose subdirectories hold skill.toml.
	Dirs []string `toml:"dirs"`
	// Permissions granted; a tool is offered only with all of its own.
	Permissions []string `toml:"permissions"`
}

// ToolsConf bounds the node's own tools and names its MCP servers.
type ToolsConf struct {
	// MCPServers' tools are offered as {server}__{tool}.
	MCPServers map[string]mcptools.ServerConfig `toml:"mcp_servers"`
	// DefaultTimeout and MaxTimeout bound one run (defaults of package skills).
	DefaultTimeout Duration `toml:"default_timeout"`
	MaxTimeout     Duration `toml:"max_timeout"`
}

// LoopConf tunes the tool loop. Zero values take the actors package's
// defaults (documented in docs/CONFIG.md).
type LoopConf struct {
	MaxToolIterations int `toml:"max_tool_iterations"`
	// ToolErrorLimit ends the loop after this many consecutive turns in
	// which every tool call failed.
	ToolErrorLimit int `toml:"tool_error_limit"`
	// MaxIdenticalCalls is how often one tool may run with the same
	// arguments in one chat.
	MaxIdenticalCalls int `toml:"max_identical_calls"`
	// OnLimit is "answer" (one last call offering no tools) or "error".
	OnLimit          string `toml:"on_limit"`
	MaxParallelTools int    `toml:"max_parallel_tools"`
	// Tools is "direct" (every agent tool with its schema, plus edge_call)
	// or "compact" (edge_call alone, listing agents and their actions).
	Tools string `toml:"tools"`
	// Select limits, per agent id, the tools offered to the model.
	Select map[string][]string `toml:"select"`
	// Timeouts override the default and maximum timeout per tool category
	// (file, web, exec, git, edge_call, other).
	Timeouts         map[string]TimeoutConf `toml:"timeouts"`
	ChatTimeout      Duration               `toml:"chat_timeout"`
	HeartbeatTimeout Duration               `toml:"heartbeat_timeout"`
	// SessionTools offers the session tools (agents_list, sessions_*,
	// session_status); on unless set to false (nil means on).
	// MaxSpawnDepth (default 2) bounds how deep sub-agents and sends nest;
	// MaxChildren (default 4) the sub-agents one conversation runs at once.
	// MaxSpawnsPerMessage (default 32) the chats sub-agents and sends
	// start in all for one message, across the tree.
	SessionTools        *bool `toml:"session_tools"`
	MaxSpawnDepth       int   `toml:"max_spawn_depth"`
	MaxChildren         int   `toml:"max_children"`
	MaxSpawnsPerMessage int   `toml:"max_spawns_per_message"`
	// QuestionTool offers the question tool (ask the person); on unless
	// set to false (nil means on). QuestionTimeout bounds the wait for a
	// reply (default 5 min).
	QuestionTool    *bool    `toml:"question_tool"`
	QuestionTimeout Duration `toml:"question_timeout"`
	// MaxRunningChats bounds the chats the node runs at once (default
	// 512); more wait for a slot, within their own deadline. Sub-agent
	// chats and sends (sessions tools) run within their parent's slot.
	MaxRunningChats int `toml:"max_running_chats"`
	// ChatInputMBPerHour bounds the input (text, system prompt, seeded
	// history) that API clients' chats bring the node, which stores it
	// all, in MiB an hour (default 128; negative: no bound);
	// ChatInputBurstMB is how much may come at once (default 32, at least
	// 8). A chat past the bound is refused 429 before anything of it is
	// stored (chatinput.go).
	ChatInputMBPerHour int `toml:"chat_input_mb_per_hour"`
	ChatInputBurstMB   int `toml:"chat_input_burst_mb"`
	// DormantAfter is how long a conversation waits idle before it gives
	// up its actor and keeps only its history, compacted, in memory
	// (default 2 s); at IdleTimeout (10 min) or more, conversations keep
	// their actors until they stop. DormantMemoryMB bounds the history
	// dormant conversations hold (default 32 MiB, at most 1024); past it
	// an idle conversation stops and its next chat reads the store.
	DormantAfter    Duration `toml:"dormant_after"`
	DormantMemoryMB int      `toml:"dormant_memory_mb"`
	// AgentForgetAfter is how long an edge agent stays known while offline
	// with no call in flight (default 7 days; negative: for ever); past it
	// the node forgets it until it is heard from again. MaxAgents bounds
	// the agents known at once (default 1024): a new one past it forgets
	// the idle agent heard from longest ago, or is ignored if none is idle.
	AgentForgetAfter Duration `toml:"agent_forget_after"`
	MaxAgents        int      `toml:"max_agents"`
}

// SessionToolsOn reports whether the session tools are offered.
func (l LoopConf) SessionToolsOn() bool { return l.SessionTools == nil || *l.SessionTools }

// QuestionToolOn reports whether the question tool is offered.
func (l LoopConf) QuestionToolOn() bool { return l.QuestionTool == nil || *l.QuestionTool }

// TimeoutConf is one tool category's timeouts.
type TimeoutConf struct {
	Default Duration `toml:"default"`
	Max     Duration `toml:"max"`
}

// validateListen checks the address a listener of the node takes from
// key: empty (the default) or "off" (for http.listen), else host:port
// with a port number or service name, so that a typo is refused naming
// its key when the file is read, not by the listener halfway through the
// start.
func validateListen(key, addr string) error {
	if addr == "" || (key == "http.listen" && addr == "off") {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return fmt.Errorf("%s: %q: want HOST:PORT with a port of 0-65535, such as \"127.0.0.1:8787\" (%v)", key, addr, err)
	}
	return nil
}

// Duration is a time.Duration written as "30s" in TOML, the same type as
// the [llm] section's.
type Duration = llm.Duration

// LoadConfig reads and validates evoclaw.toml, all but the secrets its
// *_env keys name, which Validate (and so Start) checks.
func LoadConfig(path string) (Config, error) {
	var c Config
	base, err := tomlconf.DecodeFile(path, &c)
	if err != nil {
		return Config{}, fmt.Errorf("load %s: %w", path, err)
	}
	if c.LLM.Provider == llm.ProviderScripted && c.LLM.Transcript == "" {
		// Written so in the file (the default is filled in later): a node
		// without a model would refuse every chat saying [llm] is missing.
		return Config{}, fmt.Errorf("load %s: llm.transcript: required with provider \"scripted\", which replays a transcript file "+
			"and is not a language model (docs/LLM.md); for a model name provider \"openai\" or \"anthropic\", "+
			"and for a node without one leave [llm] out", path)
	}
	abs := func(p string) string { return tomlconf.Resolve(base, p) }
	c.DataDir = abs(c.DataDir)
	c.Broker.TLSFiles = c.Broker.TLSFiles.Resolve(base)
	c.Broker.BrokerSecurity = c.Broker.BrokerSecurity.resolve(base)
	c.Cluster.TLS = c.Cluster.TLS.Resolve(base)
	c.LLM.Transcript = abs(c.LLM.Transcript)
	for i, d := range c.Skills.Dirs {
		if !filepath.IsAbs(d) { // an empty entry names the file's directory
			c.Skills.Dirs[i] = filepath.Join(base, d)
		}
	}
	c.Builtin.Resolve(base)
	if err := c.validate(false); err != nil {
		return Config{}, fmt.Errorf("load %s: %w", path, err)
	}
	return c, nil
}

// Validate fills defaults and checks the configuration, and that the
// environment variables its *_env keys name hold the secrets.
func (c *Config) Validate() error { return c.validate(true) }

// validate is Validate, checking the secrets only when asked: reading
// the file (LoadConfig) does not, so that an operator command given it
// with --config runs without the process's secrets; starting does.
func (c *Config) validate(secrets bool) error {
	var errs []error
	if c.NodeID == "" {
		c.NodeID = DefaultNodeID
	}
	if err := wire.ValidateAgentID(c.NodeID); err != nil {
		errs = append(errs, fmt.Errorf("node_id: %w", err))
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if err := tiers.ValidateSync(&c.AuditSync); err != nil {
		errs = append(errs, err)
	}
	if err := c.Audit.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Broker.URL == "" && c.Broker.Listen == "" {
		c.Broker.Listen = DefaultBrokerListen
	}
	errs = append(errs, c.Broker.validateSecurity()...)
	for _, l := range []struct{ key, addr string }{
		{"broker.listen", c.Broker.Listen}, {"broker.tls_listen", c.Broker.TLSListen}, {"http.listen", c.HTTP.Listen},
	} {
		if err := validateListen(l.key, l.addr); err != nil {
			errs = append(errs, err)
		}
	}
	if secrets && c.Broker.PasswordEnv != "" && os.Getenv(c.Broker.PasswordEnv) == "" {
		errs = append(errs, fmt.Errorf("broker.password_env: environment variable %s is empty", c.Broker.PasswordEnv))
	}
	if err := c.LLM.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.Builtin.Validate("builtin")...)
	errs = append(errs, mcptools.ValidateServers("tools.mcp_servers", c.Tools.MCPServers)...)
	switch c.Loop.OnLimit {
	case "", actors.OnLimitAnswer, actors.OnLimitError:
	default:
		errs = append(errs, fmt.Errorf("loop.on_limit: %q, want %q or %q", c.Loop.OnLimit, actors.OnLimitAnswer, actors.OnLimitError))
	}
	switch c.Loop.Tools {
	case "", actors.ToolsDirect, actors.ToolsCompact:
	default:
		errs = append(errs, fmt.Errorf("loop.tools: %q, want %q or %q", c.Loop.Tools, actors.ToolsDirect, actors.ToolsCompact))
	}
	for cat, tc := range c.Loop.Timeouts {
		if _, ok := actors.DefaultTimeoutRules[cat]; !ok {
			errs = append(errs, fmt.Errorf("loop.timeouts.%s: unknown category; known: file, web, exec, git, edge_call, other", cat))
		}
		if tc.Default.Duration < 0 || tc.Max.Duration < 0 || (tc.Max.Duration > 0 && tc.Default.Duration > tc.Max.Duration) {
			errs = append(errs, fmt.Errorf("loop.timeouts.%s: default %s and max %s: want 0 <= default <= max", cat, tc.Default.Duration, tc.Max.Duration))
		}
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"max_tool_iterations", c.Loop.MaxToolIterations}, {"tool_error_limit", c.Loop.ToolErrorLimit},
		{"max_identical_calls", c.Loop.MaxIdenticalCalls}, {"max_parallel_tools", c.Loop.MaxParallelTools},
		{"max_spawn_depth", c.Loop.MaxSpawnDepth}, {"max_children", c.Loop.MaxChildren},
		{"max_spawns_per_message", c.Loop.MaxSpawnsPerMessage},
		{"max_running_chats", c.Loop.MaxRunningChats}, {"dormant_memory_mb", c.Loop.DormantMemoryMB},
		{"max_agents", c.Loop.MaxAgents}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("loop.%s: %d must not be negative (0 means the default)", n.key, n.v))
		}
	}
	if b := c.Loop.ChatInputBurstMB; b < 0 || b > 0 && b < minChatInputBurstMB {
		errs = append(errs, fmt.Errorf("loop.chat_input_burst_mb: %d, want 0 (the default, %d) or at least %d (the largest chat, 4 MiB, beside the share kept for small ones)",
			b, DefaultChatInputBurstMB, minChatInputBurstMB))
	}
	if c.Loop.DormantMemoryMB > maxDormantMemoryMB {
		errs = append(errs, fmt.Errorf("loop.dormant_memory_mb: %d is more than %d", c.Loop.DormantMemoryMB, maxDormantMemoryMB))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"tools.default_timeout", c.Tools.DefaultTimeout.Duration}, {"tools.max_timeout", c.Tools.MaxTimeout.Duration},
		{"loop.chat_timeout", c.Loop.ChatTimeout.Duration}, {"loop.heartbeat_timeout", c.Loop.HeartbeatTimeout.Duration},
		{"loop.question_timeout", c.Loop.QuestionTimeout.Duration}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %s must not be negative (0 means the default)", d.key, d.v))
		}
	}
	if c.Broker.MaxPacketBytes < 0 || int64(c.Broker.MaxPacketBytes) > math.MaxUint32 {
		errs = append(errs, fmt.Errorf("broker.max_packet_bytes: %d, want 0 (the default) to %d", c.Broker.MaxPacketBytes, uint32(math.MaxUint32)))
	}
	if c.Loop.DormantAfter.Duration < 0 {
		errs = append(errs, fmt.Errorf("loop.dormant_after: %s must not be negative (0 means the default, %s; %s or more keeps conversations whole until they stop)",
			c.Loop.DormantAfter.Duration, actors.DefaultDormantAfter, actors.DefaultIdleTimeout))
	}
	if err := c.Inbound.validate(); err != nil {
		errs = append(errs, err)
	}
	defaults.Positive(&c.Loop.ChatTimeout.Duration, max(DefaultChatTimeout, c.LLM.LongestLoad()+DefaultChatAfterLoad))
	defaults.Positive(&c.Loop.MaxRunningChats, DefaultMaxRunningChats)
	if c.Loop.ChatInputMBPerHour == 0 { // negative: no bound
		c.Loop.ChatInputMBPerHour = DefaultChatInputMBPerHour
	}
	defaults.Positive(&c.Loop.ChatInputBurstMB, DefaultChatInputBurstMB)
	ids := map[string]bool{}
	for i, j := range c.Jobs {
		if _, err := jobs.Compile(j); err != nil {
			errs = append(errs, fmt.Errorf("jobs[%d]: %w", i, err))
		}
		if ids[j.ID] {
			errs = append(errs, fmt.Errorf("jobs[%d]: id %q declared twice", i, j.ID))
		}
		ids[j.ID] = true
	}
	if c.Scheduler.MaxRunning < 0 || c.Scheduler.AgentWait.Duration < 0 {
		errs = append(errs, errors.New("scheduler: max_running and agent_wait must not be negative"))
	}
	if c.Scheduler.AgentWait.Duration == 0 {
		c.Scheduler.AgentWait.Duration = DefaultAgentWait
	}
	errs = append(errs, validateGroups(c.Groups)...)
	if err := c.Approvals.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Cluster.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(c.Approvals.Rules) > 0 && c.Approvals.Timeout.Duration >= c.Loop.ChatTimeout.Duration {
		// The chat would give up first: every approval would end canceled.
		errs = append(errs, fmt.Errorf("approvals.timeout %s must be shorter than loop.chat_timeout %s",
			c.Approvals.Timeout.Duration, c.Loop.ChatTimeout.Duration))
	}
	errs = append(errs, c.Delegation.validate()...)
	return errors.Join(errs...)
}

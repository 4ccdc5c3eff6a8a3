package edge

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/evoclaw/evoclaw/edge/defaults"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/tomlconf"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
	"github.com/evoclaw/evoclaw/persistence/tiers"
	"github.com/evoclaw/evoclaw/skills/mcptools"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// Defaults of Config.
const (
	DefaultBroker            = "tcp://127.0.0.1:1883"
	DefaultHeartbeatInterval = 30 * time.Second
	DefaultToolTimeout       = 30 * time.Second
	DefaultMaxToolTimeout    = 300 * time.Second
	DefaultMaxConcurrent     = 4
	DefaultQueueLen          = 64
	// DefaultMaxResultBytes caps the result carried in one report; the full
	// size is reported alongside.
	DefaultMaxResultBytes = 256 << 10
	// MaxResultBytesLimit is the largest [tools] max_result_bytes: half of
	// the largest message, leaving room for the rest of the report.
	MaxResultBytesLimit = wire.MaxMessageBytes / 2
)

// Config is an edge agent's configuration, read from agent.toml. Relative
// paths are resolved against the file's directory.
type Config struct {
	AgentID   string `toml:"agent_id"`
	AgentType string `toml:"agent_type"`
	// Capabilities is the one-line summary shown to the orchestrator's LLM;
	// empty means one built from AgentType and the tools the agent offers
	// (CapabilityLine).
	Capabilities string `toml:"capabilities"`
	// DataDir holds the agent's audit database (default ./evoclaw-edge-{id}).
	DataDir string    `toml:"data_dir"`
	MQTT    MQTTConf  `toml:"mqtt"`
	Skills  SkillConf `toml:"skills"`
	Tools   ToolConf  `toml:"tools"`
	// Builtin enables the built-in tools (read, write, edit, bash, grep,
	// find) jailed to a workspace directory.
	Builtin toolbox.Builtin `toml:"builtin"`
	// HeartbeatInterval between heartbeat reports (default 30 s).
	HeartbeatInterval Duration `toml:"heartbeat_interval"`
	// AuditSync is "normal" (default) or "full"; see docs/CONFIG.md.
	AuditSync string `toml:"audit_sync"`
	// Audit configures the agent's audit trail: hot ring, warm retention,
	// cold tier (the orchestrator's [audit] keys, docs/AUDIT.md).
	Audit tiers.Config `toml:"audit"`
	// LLM gives the agent a model of its own to answer prompt commands with
	// a tool loop over its local tools. Empty: prompts are refused.
	LLM LLMConf `toml:"llm"`
	// Version is the binary's version, which the agent reports in its
	// online status and records in its agent_start event; set by the
	// program, not read from the file.
	Version string `toml:"-"`
}

// Defaults of LLMConf.
const (
	DefaultPromptTimeout    = 5 * time.Minute
	DefaultPromptIterations = 10
)

// LLMConf configures the agent's own model: every key of the
// orchestrator's [llm] section (docs/LLM.md), plus the prompt loop's own.
type LLMConf struct {
	// Config is the provider chain. Provider "" means no model: prompt
	// commands are refused.
	llm.Config
	// PromptTimeout bounds one prompt with all its tool calls (default 5 min).
	PromptTimeout Duration `toml:"prompt_timeout"`
	// MaxToolIterations bounds the prompt's tool loop (default 10).
	MaxToolIterations int `toml:"max_tool_iterations"`
}

// DefaultOutboxLen bounds the reports kept while the broker is unreachable.
const DefaultOutboxLen = 10000

// DefaultOutboxBytes bounds the bytes of the reports kept while the broker
// is unreachable: DefaultOutboxLen reports of DefaultMaxResultBytes alone
// would take 2.6 GB of a device's disk.
const DefaultOutboxBytes = 64 << 20

// MQTTConf says how to reach the broker.
type MQTTConf struct {
	// OutboxLen bounds the result reports kept on disk while the broker is
	// unreachable (default 10000); beyond it the oldest are dropped.
	OutboxLen int `toml:"outbox_len"`
	// OutboxBytes bounds the bytes of those reports together (default
	// 64 MiB); beyond it, too, the oldest are dropped.
	OutboxBytes int64  `toml:"outbox_bytes"`
	Broker      string `toml:"broker"`
	Username    string `toml:"username"`
	// PasswordEnv names the environment variable holding the password;
	// passwords never live in the file.
	PasswordEnv string `toml:"password_env"`
	// TLSFiles: ca_file, cert_file, key_file, insecure_skip_verify.
	mqttc.TLSFiles
}

// SkillConf says where tools come from and what they may do.
type SkillConf struct {
	Dirs []string `toml:"dirs"`
	// Permissions granted to this agent's tools; a tool is offered only if
	// all of its permissions are granted.
	Permissions []string `toml:"permissions"`
}

// ToolConf bounds tool execution.
type ToolConf struct {
	DefaultTimeout Duration `toml:"default_timeout"`
	MaxTimeout     Duration `toml:"max_timeout"`
	MaxConcurrent  int      `toml:"max_concurrent"`
	QueueLen       int      `toml:"queue_len"`
	MaxResultBytes int      `toml:"max_result_bytes"`
	// DisableStreaming stops the agent from streaming tool output as
	// progress reports even when a command asks for it (stream_output);
	// false, the default, streams when asked, within the bounds of
	// docs/WIRE.md.
	DisableStreaming bool `toml:"disable_streaming"`
	// MCPServers are MCP servers whose tools the agent offers as
	// {server}__{tool}; see docs/SKILLS.md.
	MCPServers map[string]mcptools.ServerConfig `toml:"mcp_servers"`
	// RequestLogBytes bounds the bytes of the reports the agent keeps to
	// answer a redelivered command again (default 64 MiB, 0 means the
	// default, negative is an error). Past it the oldest reports are
	// dropped: a redelivery of one is answered result_dropped, never run
	// again (docs/WIRE.md, Delivery).
	RequestLogBytes int64 `toml:"request_log_bytes"`
}

// Duration is a time.Duration written as "30s" in TOML, the same type as
// the [llm] section's.
type Duration = llm.Duration

// LoadConfig reads and validates agent.toml, all but the secrets its
// *_env keys name, which Validate (and so New) checks.
func LoadConfig(path string) (Config, error) {
	var c Config
	base, err := tomlconf.DecodeFile(path, &c)
	if err != nil {
		return Config{}, fmt.Errorf("load %s: %w", path, err)
	}
	abs := func(p string) string { return tomlconf.Resolve(base, p) }
	c.DataDir = abs(c.DataDir)
	c.LLM.Transcript = abs(c.LLM.Transcript)
	c.MQTT.TLSFiles = c.MQTT.TLSFiles.Resolve(base)
	for i, d := range c.Skills.Dirs {
		c.Skills.Dirs[i] = abs(d)
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
	if err := wire.ValidateAgentID(c.AgentID); err != nil {
		if c.AgentID == "" { // the packaged agent.toml leaves it to be set
			err = fmt.Errorf("%w: set agent_id to this agent's name, the NAME of `evoclaw agents add NAME` on the node", err)
		}
		errs = append(errs, fmt.Errorf("agent_id: %w", err))
	} else if err := wire.ValidateToolPrefix(c.AgentID); err != nil {
		// A node drops such an agent's messages: it would run, unused.
		errs = append(errs, fmt.Errorf("agent_id: %w", err))
	}
	if c.AgentType == "" {
		c.AgentType = "monitor"
	}
	if len(c.Capabilities) > wire.MaxCapabilitiesLen {
		errs = append(errs, fmt.Errorf("capabilities: %d bytes, at most %d", len(c.Capabilities), wire.MaxCapabilitiesLen))
	}
	if c.DataDir == "" {
		c.DataDir = "evoclaw-edge-" + c.AgentID
	}
	if c.MQTT.Broker == "" {
		c.MQTT.Broker = DefaultBroker
	}
	errs = append(errs, c.outOfRange()...)
	defaults.Positive(&c.MQTT.OutboxLen, DefaultOutboxLen)
	defaults.Positive(&c.MQTT.OutboxBytes, DefaultOutboxBytes)
	if secrets && c.MQTT.PasswordEnv != "" && os.Getenv(c.MQTT.PasswordEnv) == "" {
		errs = append(errs, fmt.Errorf("mqtt.password_env: environment variable %s is empty", c.MQTT.PasswordEnv))
	}
	defaults.Positive(&c.HeartbeatInterval.Duration, DefaultHeartbeatInterval)
	t := &c.Tools
	defaults.Positive(&t.DefaultTimeout.Duration, DefaultToolTimeout)
	defaults.Positive(&t.MaxTimeout.Duration, DefaultMaxToolTimeout)
	if t.DefaultTimeout.Duration > t.MaxTimeout.Duration {
		errs = append(errs, fmt.Errorf("tools.default_timeout %s exceeds tools.max_timeout %s", t.DefaultTimeout, t.MaxTimeout))
	}
	defaults.Positive(&t.MaxConcurrent, DefaultMaxConcurrent)
	defaults.Positive(&t.QueueLen, DefaultQueueLen)
	defaults.Positive(&t.MaxResultBytes, DefaultMaxResultBytes)
	if t.RequestLogBytes < 0 {
		errs = append(errs, fmt.Errorf("tools.request_log_bytes %d is negative; 0 means the default, %d", t.RequestLogBytes, int64(sqlite.DefaultRequestLogBytes)))
	}
	defaults.Positive(&t.RequestLogBytes, sqlite.DefaultRequestLogBytes)
	errs = append(errs, c.Builtin.Validate("builtin")...)
	errs = append(errs, mcptools.ValidateServers("tools.mcp_servers", c.Tools.MCPServers)...)
	if err := tiers.ValidateSync(&c.AuditSync); err != nil {
		errs = append(errs, err)
	}
	if err := c.Audit.Validate(); err != nil {
		errs = append(errs, err)
	}
	l := &c.LLM
	if l.Provider != "" {
		if l.Provider == llm.ProviderScripted && l.Transcript == "" {
			// The built-in transcript is the orchestrator's demo.
			errs = append(errs, errors.New("llm.transcript: required with provider \"scripted\" on an edge agent"))
		}
		if err := l.Config.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	defaults.Positive(&l.PromptTimeout.Duration, DefaultPromptTimeout)
	defaults.Positive(&l.MaxToolIterations, DefaultPromptIterations)
	return errors.Join(errs...)
}

// outOfRange names the keys given a value the agent would otherwise
// replace by its default without a word: a negative count, size or
// duration (0 means the default), a result larger than a report carries.
func (c *Config) outOfRange() []error {
	var errs []error
	for _, k := range []struct {
		key string
		neg bool
		v   any
	}{
		{"heartbeat_interval", c.HeartbeatInterval.Duration < 0, c.HeartbeatInterval},
		{"mqtt.outbox_len", c.MQTT.OutboxLen < 0, c.MQTT.OutboxLen},
		{"mqtt.outbox_bytes", c.MQTT.OutboxBytes < 0, c.MQTT.OutboxBytes},
		{"tools.default_timeout", c.Tools.DefaultTimeout.Duration < 0, c.Tools.DefaultTimeout},
		{"tools.max_timeout", c.Tools.MaxTimeout.Duration < 0, c.Tools.MaxTimeout},
		{"tools.max_concurrent", c.Tools.MaxConcurrent < 0, c.Tools.MaxConcurrent},
		{"tools.queue_len", c.Tools.QueueLen < 0, c.Tools.QueueLen},
		{"tools.max_result_bytes", c.Tools.MaxResultBytes < 0, c.Tools.MaxResultBytes},
		{"llm.prompt_timeout", c.LLM.PromptTimeout.Duration < 0, c.LLM.PromptTimeout},
		{"llm.max_tool_iterations", c.LLM.MaxToolIterations < 0, c.LLM.MaxToolIterations},
	} {
		if k.neg {
			errs = append(errs, fmt.Errorf("%s: %v must not be negative (0 means the default)", k.key, k.v))
		}
	}
	if c.Tools.MaxResultBytes > MaxResultBytesLimit {
		errs = append(errs, fmt.Errorf("tools.max_result_bytes: %d is more than a report carries, %d", c.Tools.MaxResultBytes, MaxResultBytesLimit))
	}
	return errs
}

package edge

import (
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestConfigOutOfRange: a negative count, size or duration in agent.toml,
// and a max_result_bytes larger than a report carries, are refused when
// the file is read, naming the key. Before, the agent replaced each with
// its default without a word: max_concurrent = -1 ran four tools at once,
// max_result_bytes = 99999999 carried 256 KiB.
func TestConfigOutOfRange(t *testing.T) {
	const id = "agent_id = \"a1\"\n"
	tests := []struct{ body, want string }{
		{id + "heartbeat_interval = \"-5s\"\n", "heartbeat_interval: -5s must not be negative"},
		{id + "[mqtt]\noutbox_len = -1\n", "mqtt.outbox_len: -1 must not be negative"},
		{id + "[mqtt]\noutbox_bytes = -1\n", "mqtt.outbox_bytes: -1 must not be negative"},
		{id + "[tools]\ndefault_timeout = \"-1s\"\n", "tools.default_timeout: -1s must not be negative"},
		{id + "[tools]\nmax_timeout = \"-1s\"\n", "tools.max_timeout: -1s must not be negative"},
		{id + "[tools]\nmax_concurrent = -1\n", "tools.max_concurrent: -1 must not be negative"},
		{id + "[tools]\nqueue_len = -1\n", "tools.queue_len: -1 must not be negative"},
		{id + "[tools]\nmax_result_bytes = -1\n", "tools.max_result_bytes: -1 must not be negative"},
		{id + "[tools]\nmax_result_bytes = 99999999\n", "tools.max_result_bytes: 99999999 is more than a report carries, 524288"},
		{id + "[llm]\nprompt_timeout = \"-1m\"\n", "llm.prompt_timeout: -1m0s must not be negative"},
		{id + "[llm]\nmax_tool_iterations = -1\n", "llm.max_tool_iterations: -1 must not be negative"},
		{id + "[audit]\nhot_capacity = -3\n", "audit.hot_capacity: -3 must not be negative"},
		{id + "[tools]\nmax_result_bytes = 524288\nmax_concurrent = 0\n[mqtt]\noutbox_len = 0\n", ""},
	}
	for _, tt := range tests {
		c, ok := loadConfig(t, t.TempDir(), tt.body, tt.want)
		if ok && tt.want == "" && (c.Tools.MaxResultBytes != wire.MaxMessageBytes/2 || c.Tools.MaxConcurrent != DefaultMaxConcurrent) {
			t.Errorf("%q: tools %+v", tt.body, c.Tools)
		}
	}
}

// TestConfigAgentIDPrefixesTools: an agent_id a node could not offer the
// tools of (it holds "__" or ends with '_': its tools' names would read
// back as another agent's, and a node drops its messages) is refused when
// the file is read, instead of an agent that runs unused.
func TestConfigAgentIDPrefixesTools(t *testing.T) {
	for _, tt := range []struct{ id, want string }{
		{"pi__kitchen", `agent_id: "pi__kitchen": must not hold "__" or end with '_'`},
		{"pi_", `agent_id: "pi_": must not hold "__" or end with '_'`},
		{"pi_kitchen", ""},
	} {
		loadConfig(t, t.TempDir(), "agent_id = \""+tt.id+"\"\n", tt.want)
	}
}

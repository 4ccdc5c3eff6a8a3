package wire

import (
	"fmt"
	"strings"
)

// TopicPrefix is the root of every evoclaw topic.
const TopicPrefix = "evoclaw/agents/"

// Topic kinds: the last segment of an agent topic.
const (
	KindCommands     = "commands"
	KindReports      = "reports"
	KindCapabilities = "capabilities"
	KindStatus       = "status"
)

// MaxAgentIDLen bounds an agent id; ids end up in topics, file names and
// tool names.
const MaxAgentIDLen = 48

// CommandsTopic is where the orchestrator sends commands to agent id.
func CommandsTopic(id string) string { return TopicPrefix + id + "/" + KindCommands }

// ReportsTopic is where agent id publishes results, errors and heartbeats.
func ReportsTopic(id string) string { return TopicPrefix + id + "/" + KindReports }

// CapabilitiesTopic carries agent id's retained capability line.
func CapabilitiesTopic(id string) string { return TopicPrefix + id + "/" + KindCapabilities }

// StatusTopic carries agent id's retained online/offline status.
func StatusTopic(id string) string { return TopicPrefix + id + "/" + KindStatus }

// AllAgents returns the wildcard subscription for one topic kind of every agent.
func AllAgents(kind string) string { return TopicPrefix + "+/" + kind }

// ParseTopic splits an agent topic into agent id and kind. It fails on
// anything that is not exactly evoclaw/agents/{id}/{kind} with a valid id.
func ParseTopic(topic string) (agentID, kind string, err error) {
	rest, ok := strings.CutPrefix(topic, TopicPrefix)
	if !ok {
		return "", "", fmt.Errorf("topic %q: not under %s", topic, TopicPrefix)
	}
	agentID, kind, ok = strings.Cut(rest, "/")
	if !ok || strings.Contains(kind, "/") {
		return "", "", fmt.Errorf("topic %q: want %s{agent_id}/{kind}", topic, TopicPrefix)
	}
	switch kind {
	case KindCommands, KindReports, KindCapabilities, KindStatus:
	default:
		return "", "", fmt.Errorf("topic %q: unknown kind %q", topic, kind)
	}
	if err := ValidateAgentID(agentID); err != nil {
		return "", "", fmt.Errorf("topic %q: %w", topic, err)
	}
	return agentID, kind, nil
}

// ValidateAgentID accepts ids of 1 to MaxAgentIDLen characters from
// [A-Za-z0-9_-]. Anything else could escape a topic level, a file name or an
// LLM tool name, so it is refused rather than cleaned.
func ValidateAgentID(id string) error {
	if id == "" {
		return fmt.Errorf("agent id is empty")
	}
	if len(id) > MaxAgentIDLen {
		return fmt.Errorf("agent id %.20q… is %d bytes, at most %d allowed", id, len(id), MaxAgentIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("agent id %q: character %q not allowed (use letters, digits, '-' and '_')", id, c)
		}
	}
	return nil
}

// ToolSep joins an agent id (or a group's name) and a tool's name in the
// name the model calls it by ("pi-1__sysinfo"), the same convention as MCP
// tools' {server}__{tool}. The name is split again at its first ToolSep.
const ToolSep = "__"

// ValidateToolPrefix refuses an agent id or group name that cannot prefix
// its tools' names unambiguously: one that holds ToolSep ("a__b" + "__" +
// "x" reads back as "a" and "b__x", agent a's MCP tool), or ends with '_'
// ("pi_" + "__" + "x" reads back as "pi" and "_x"). Such an agent's tools
// could be taken for another's.
func ValidateToolPrefix(id string) error {
	if strings.Contains(id, ToolSep) || strings.HasSuffix(id, "_") {
		return fmt.Errorf("%q: must not hold %q or end with '_': its tools' names (%s%sTOOL) would read back as another agent's", id, ToolSep, id, ToolSep)
	}
	return nil
}

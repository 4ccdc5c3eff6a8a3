package broker

import (
	"strings"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// Role is what an authenticated identity may do on the evoclaw topics.
type Role string

// The roles of the access control list.
const (
	// RoleAgent is an edge agent. Its name is its agent id; it may publish
	// only on evoclaw/agents/{name}/reports, capabilities and status, and
	// subscribe only to evoclaw/agents/{name}/commands.
	RoleAgent Role = "agent"
	// RoleOrchestrator may publish commands to any agent
	// (evoclaw/agents/{id}/commands) and the queue of pending approvals
	// (evoclaw/approvals/{id}, retained), and subscribe to any filter under
	// evoclaw/agents/ or evoclaw/approvals/, including shared
	// subscriptions ($share/{group}/...). Agents can do neither with
	// approvals: a forged pending approval or a cleared one would mislead
	// the people who decide.
	RoleOrchestrator Role = "orchestrator"
	// roleAnonymous is a client without credentials on a broker that allows
	// them (loopback only): it may do anything.
	roleAnonymous Role = "anonymous"
)

// Valid reports whether r is RoleAgent or RoleOrchestrator.
func (r Role) Valid() bool { return r == RoleAgent || r == RoleOrchestrator }

// identity is who an authenticated client is.
type identity struct {
	name string
	role Role
}

// mayPublish reports whether id may publish on topic (a topic name, no
// wildcards). The same rule applies to a client's last will.
func (id identity) mayPublish(topic string) bool {
	switch id.role {
	case roleAnonymous:
		return true
	case RoleAgent:
		return topic == wire.ReportsTopic(id.name) || topic == wire.CapabilitiesTopic(id.name) || topic == wire.StatusTopic(id.name)
	case RoleOrchestrator:
		if isApprovalTopic(topic) {
			return true
		}
		_, kind, err := wire.ParseTopic(topic)
		return err == nil && kind == wire.KindCommands
	}
	return false
}

// mayRead reports whether id may subscribe to filter, or receive a message
// on a topic: mochi asks with the filter at SUBSCRIBE and with the topic at
// each delivery.
func (id identity) mayRead(filter string) bool {
	switch id.role {
	case roleAnonymous:
		return true
	case RoleAgent:
		return filter == wire.CommandsTopic(id.name)
	case RoleOrchestrator:
		f := stripShare(filter)
		return underAgents(f) || underApprovals(f)
	}
	return false
}

// stripShare removes a shared-subscription prefix, $share/{group}/.
func stripShare(filter string) string {
	rest, ok := strings.CutPrefix(filter, "$share/")
	if !ok {
		return filter
	}
	_, f, ok := strings.Cut(rest, "/")
	if !ok {
		return "" // no filter after the group: refused
	}
	return f
}

// underAgents reports whether every topic filter matches lies under
// evoclaw/agents/: the first two levels must be literal.
func underAgents(filter string) bool {
	rest, ok := strings.CutPrefix(filter, wire.TopicPrefix)
	return ok && rest != ""
}

// ApprovalsPrefix is the topic level of pending approvals,
// evoclaw/approvals/{id} (orchestrator/internal/approvals.TopicPrefix).
const ApprovalsPrefix = "evoclaw/approvals/"

// isApprovalTopic reports whether topic is exactly evoclaw/approvals/{id},
// with an id of one level and no wildcard.
func isApprovalTopic(topic string) bool {
	id, ok := strings.CutPrefix(topic, ApprovalsPrefix)
	return ok && id != "" && !strings.ContainsAny(id, "/+#")
}

// underApprovals reports whether every topic filter matches lies under
// evoclaw/approvals/.
func underApprovals(filter string) bool {
	rest, ok := strings.CutPrefix(filter, ApprovalsPrefix)
	return ok && rest != ""
}

// neverRetained says why nothing may be retained on topic, "" when
// something may. A retained command would run again at every start of the
// agent (a retained shutdown is a restart loop under a service manager); a
// retained report (a result, a heartbeat) answers no call that is still
// waiting, and came back at each start of a node, or of a node's session,
// as a late result, and made an agent long gone look online for a
// heartbeat timeout; docs/WIRE.md. An agent's status and capabilities are
// retained on purpose.
func neverRetained(topic string) string {
	_, kind, err := wire.ParseTopic(topic)
	switch {
	case err != nil:
		return ""
	case kind == wire.KindCommands:
		return "commands are never retained"
	case kind == wire.KindReports:
		return "reports are never retained"
	}
	return ""
}

package broker

import (
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
)

func TestACL(t *testing.T) {
	t.Parallel()
	alex := identity{name: "alex-eye", role: RoleAgent}
	orch := identity{name: "ops", role: RoleOrchestrator}
	anon := identity{role: roleAnonymous}
	none := identity{name: "x", role: "stranger"}
	tests := []struct {
		id      identity
		publish bool // else read (subscribe or receive)
		topic   string
		ok      bool
	}{
		{alex, true, "evoclaw/agents/alex-eye/reports", true},
		{alex, true, "evoclaw/agents/alex-eye/capabilities", true},
		{alex, true, "evoclaw/agents/alex-eye/status", true},
		{alex, true, "evoclaw/agents/alex-eye/commands", false},
		{alex, true, "evoclaw/agents/bob/reports", false},
		{alex, true, "evoclaw/agents/bob/status", false},
		{alex, true, "evoclaw/agents/alex-eye/reports/extra", false},
		{alex, true, "evoclaw/agents/alex-eye", false},
		{alex, true, "other/topic", false},
		{alex, false, "evoclaw/agents/alex-eye/commands", true},
		{alex, false, "evoclaw/agents/bob/commands", false},
		{alex, false, "evoclaw/agents/+/commands", false},
		{alex, false, "evoclaw/agents/alex-eye/#", false},
		{alex, false, "#", false},
		{alex, false, "$SYS/#", false},
		{alex, false, "evoclaw/agents/alex-eye/reports", false},
		{orch, true, "evoclaw/agents/alex-eye/commands", true},
		{orch, true, "evoclaw/agents/bob/commands", true},
		{orch, true, "evoclaw/agents/bob/reports", false},
		{orch, true, "evoclaw/agents/bob/status", false},
		{orch, true, "evoclaw/agents/b+b/commands", false},
		{orch, true, "evoclaw/agents/a/b/commands", false},
		{orch, false, "evoclaw/agents/+/reports", true},
		{orch, false, "evoclaw/agents/#", true},
		{orch, false, "evoclaw/agents/bob/status", true},
		{orch, false, "$share/orchestrators/evoclaw/agents/+/reports", true},
		{orch, false, "$share/orchestrators", false},
		{orch, false, "$share/g/#", false},
		{orch, false, "#", false},
		{orch, false, "+/agents/bob/reports", false},
		{orch, false, "evoclaw/#", false},
		{orch, false, "evoclaw/agents/", false},
		{orch, false, "$SYS/broker/clients", false},
		{orch, true, "evoclaw/approvals/apr-0123", true},
		{orch, true, "evoclaw/approvals/apr-0123/x", false},
		{orch, true, "evoclaw/approvals/+", false},
		{orch, true, "evoclaw/approvals/", false},
		{orch, false, "evoclaw/approvals/#", true},
		{alex, true, "evoclaw/approvals/apr-0123", false},
		{alex, false, "evoclaw/approvals/#", false},
		{anon, true, "anything/at/all", true},
		{anon, false, "#", true},
		{none, true, "evoclaw/agents/x/reports", false},
		{none, false, "evoclaw/agents/x/commands", false},
	}
	for _, tt := range tests {
		got := tt.id.mayRead(tt.topic)
		op := "read"
		if tt.publish {
			got, op = tt.id.mayPublish(tt.topic), "publish"
		}
		if got != tt.ok {
			t.Errorf("%s %q %s %q = %v, want %v", tt.id.role, tt.id.name, op, tt.topic, got, tt.ok)
		}
	}
}

// FuzzACL: whatever topic or filter a client sends, an agent is never let
// outside its own four topics and an orchestrator never publishes anything
// but a command.
func FuzzACL(f *testing.F) {
	for _, s := range []string{"evoclaw/agents/alex/reports", "evoclaw/agents/+/commands", "#", "$share/g/evoclaw/agents/#", "evoclaw/agents/alex/commands/x", "evoclaw/agents//commands"} {
		f.Add(s)
	}
	alex := identity{name: "alex", role: RoleAgent}
	orch := identity{name: "ops", role: RoleOrchestrator}
	own := map[string]bool{"evoclaw/agents/alex/reports": true, "evoclaw/agents/alex/capabilities": true, "evoclaw/agents/alex/status": true}
	f.Fuzz(func(t *testing.T, topic string) {
		if alex.mayPublish(topic) && !own[topic] {
			t.Fatalf("agent may publish on %q", topic)
		}
		if alex.mayRead(topic) && topic != "evoclaw/agents/alex/commands" {
			t.Fatalf("agent may read %q", topic)
		}
		if orch.mayPublish(topic) {
			if _, kind, err := wire.ParseTopic(topic); err != nil || kind != wire.KindCommands {
				t.Fatalf("orchestrator may publish on %q", topic)
			}
		}
		if orch.mayRead(topic) && !strings.HasPrefix(stripShare(topic), wire.TopicPrefix) {
			t.Fatalf("orchestrator may read %q", topic)
		}
	})
}

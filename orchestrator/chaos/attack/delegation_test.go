//go:build linux

package attack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// forgedDelegations is how many delegated calls the rogue agent asks for
// under tokens the node never gave it.
const forgedDelegations = 1000

// delegationAttacks: an authenticated agent that a [delegation] rule lets
// use every tool of another agent, but that was never sent a prompt (so
// holds no token), floods the node with delegated calls under made-up
// tokens, tries to read the other agent's commands (where its prompts and
// tokens travel), and asks for a delegated call on the other agent's
// reports topic. Every call must be refused and none sent, the audit
// database must grow by a bounded amount, and the two broker attempts must
// be refused.
func delegationAttacks(t *testing.T, b *board) {
	forged := b.class("forged delegation tokens", true)
	sniff := b.class("delegation as another agent", true)

	node, pw := rogueNode(t, func(c *orchestrator.Config) {
		c.Delegation = orchestrator.DelegationConf{Allow: []orchestrator.DelegationRule{{From: "pi-rogue", To: "pi-victim", Tools: []string{"*"}, Prompt: true}}}
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "evoclaw-pi-rogue", Username: "pi-rogue", Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var (
		mu      sync.Mutex
		answers int
		wrong   []string
	)
	if err := c.Subscribe(wire.CommandsTopic("pi-rogue"), 1, func(m mqttc.Message) {
		cmd, err := wire.DecodeCommand(m.Payload)
		if err != nil || cmd.Command != wire.CmdDelegateResult {
			return
		}
		r, err := wire.DecodeDelegateResult(cmd.Payload)
		mu.Lock()
		defer mu.Unlock()
		answers++
		if err != nil || r.ErrorType != wire.ErrPermissionDenied {
			wrong = append(wrong, fmt.Sprintf("%s answered %s %q", cmd.RequestID, r.ErrorType, r.Error))
		}
	}); err != nil {
		t.Fatal(err)
	}
	sniff.try(c.Subscribe(wire.CommandsTopic("pi-victim"), 1, func(mqttc.Message) {}) != nil, "subscribed to another agent's commands")

	dbBefore := usedBytes(t, node.AuditPath())
	for i := range forgedDelegations {
		r, err := wire.NewReport("pi-rogue", "", wire.ReportDelegate, time.Now().Unix(), wire.DelegateRequest{
			RequestID: fmt.Sprintf("forged-%d", i), Token: fmt.Sprintf("dlg-%032x", i), AgentID: "pi-victim", Tool: "reboot"})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := json.Marshal(r)
		if err := c.Publish(ctx, mqttc.Message{Topic: wire.ReportsTopic("pi-rogue"), Payload: p, QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	last, stable := -1, 0
	testenv.Eventually(t, 60*time.Second, func() bool {
		mu.Lock()
		n := answers
		mu.Unlock()
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		return n > 0 && stable >= 200 // a second without a new answer
	}, "the node to answer the forged calls")
	mu.Lock()
	forged.attempts, forged.held = answers, answers-len(wrong)
	forged.failures = append(forged.failures, wrong...)
	mu.Unlock()
	// Nothing went to the victim; the refusals stored are within the quota.
	sent := countRows(t, node.AuditPath(), "tool_calls WHERE request_id IS NOT NULL AND request_id != ''")
	forged.try(sent == 0, fmt.Sprintf("%d delegated calls sent", sent))
	rows := countRows(t, node.AuditPath(), "tool_calls WHERE conversation_id = 'delegation:pi-rogue'")
	forged.try(rows > 0 && rows <= actors.DefaultEventsPerWindow, fmt.Sprintf("%d refusals audited for %d forged calls", rows, forgedDelegations))
	growth := usedBytes(t, node.AuditPath()) - dbBefore
	forged.try(growth <= maxDBGrowth, fmt.Sprintf("audit database grew %d bytes", growth))
	t.Logf("%d forged delegated calls: %d answered, %d refusals audited, the audit database grew %d bytes", forgedDelegations, answers, rows, growth)

	// A delegated call asked for on the victim's reports topic costs the
	// rogue its connection.
	c.Close()
	raw, rc := mqtttest.DialRaw(t, strings.TrimPrefix(node.BrokerURL(), "tcp://"),
		mqtttest.RawConnect{ClientID: "evoclaw-pi-rogue", Username: "pi-rogue", Password: pw})
	if rc != 0 {
		t.Fatalf("CONNACK %d", rc)
	}
	defer raw.Close()
	mqtttest.RawPublish(t, raw, wire.ReportsTopic("pi-victim"),
		`{"agent_id":"pi-victim","report_type":"delegate","payload":{"request_id":"x","token":"dlg-1","agent_id":"pi-rogue","tool":"a"}}`, false)
	sniff.try(mqtttest.RawClosed(raw, 5*time.Second), "delegate report published as another agent")
}

package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestDelegationTokensInACluster: a node alone gives plain tokens; a
// clustered node tags its tokens with its node id. reportOwner names the
// node a report is for: by its delegation token's or its request_id's
// tag; "" for what concerns every node or none in particular.
func TestDelegationTokensInACluster(t *testing.T) {
	alone := &Node{cfg: Config{NodeID: "a"}}
	clustered := &Node{cfg: Config{NodeID: "a"}, cluster: &clusterNode{}}
	if tok := alone.delegationToken("s3cr3t"); tok != "dlg-s3cr3t" {
		t.Fatalf("token of a node alone %q", tok)
	}
	own := clustered.delegationToken("s3cr3t")
	if !strings.HasPrefix(own, "dlg-a.") {
		t.Fatalf("token of clustered node a %q", own)
	}
	report := func(token string) wire.Report {
		p, _ := json.Marshal(wire.DelegateRequest{RequestID: "d1", Token: token, AgentID: "pi2", Tool: "sysinfo", Parameters: json.RawMessage(`{}`)})
		return wire.Report{AgentID: "pi1", ReportType: wire.ReportDelegate, Payload: p}
	}
	for _, tc := range []struct {
		name  string
		r     wire.Report
		owner string
	}{
		{"own token", report(own), "a"},
		{"another node's token", report("dlg-b.s3cr3t"), "b"},
		{"a node whose id extends ours", report("dlg-ab.s3cr3t"), "ab"},
		{"untagged token: answered where it arrives", report("dlg-s3cr3t"), ""},
		{"not a token", report("x"), ""},
		{"unreadable request", wire.Report{AgentID: "pi1", ReportType: wire.ReportDelegate, Payload: []byte(`{`)}, ""},
		{"a node's tool result", wire.Report{AgentID: "pi1", ReportType: wire.ReportResult, Payload: []byte(`{"request_id":"tool-b.1-2"}`)}, "b"},
		{"a node's prompt progress", wire.Report{AgentID: "pi1", ReportType: wire.ReportProgress, Payload: []byte(`{"request_id":"prompt-c.1-2"}`)}, "c"},
		{"untagged result", wire.Report{AgentID: "pi1", ReportType: wire.ReportResult, Payload: []byte(`{"request_id":"tool-1-2"}`)}, ""},
		{"tools_list reply", wire.Report{AgentID: "pi1", ReportType: wire.ReportResult, Payload: []byte(`{"request_id":"tools-pi1-1-2"}`)}, ""},
		{"heartbeat", wire.Report{AgentID: "pi1", ReportType: wire.ReportHeartbeat, Payload: []byte(`{}`)}, ""},
	} {
		if got := reportOwner(tc.r); got != tc.owner {
			t.Errorf("%s: owner %q, want %q", tc.name, got, tc.owner)
		}
	}
}

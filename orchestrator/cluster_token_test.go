package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestDelegationTokensInACluster: a node alone gives plain tokens and
// answers every delegate request; a clustered node tags its tokens with
// its node id and leaves requests under other nodes' tokens (or
// untagged ones) to them.
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
		name    string
		n       *Node
		r       wire.Report
		foreign bool
	}{
		{"alone answers all", alone, report("dlg-b.x"), false},
		{"own token", clustered, report(own), false},
		{"another node's token", clustered, report("dlg-b.s3cr3t"), true},
		{"a node whose id extends ours", clustered, report("dlg-ab.s3cr3t"), true},
		{"untagged token", clustered, report("dlg-s3cr3t"), true},
		{"not a token", clustered, report("x"), true},
		{"unreadable request is answered by each", clustered, wire.Report{AgentID: "pi1", ReportType: wire.ReportDelegate, Payload: []byte(`{`)}, false},
	} {
		if got := tc.n.foreignDelegation(tc.r); got != tc.foreign {
			t.Errorf("%s: foreign = %v, want %v", tc.name, got, tc.foreign)
		}
	}
}

//go:build nocluster

package orchestrator

import (
	"context"
	"errors"
	"net/http"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence"
)

// This evoclaw was built with the tag nocluster: no protoactor cluster,
// gRPC remote or etcd client in the binary.

// clusterChat holds nothing in this build.
type clusterChat struct{}

// errNoCluster refuses a [cluster] config in this build.
var errNoCluster = errors.New("cluster: this evoclaw was built without clustering (build tag nocluster); remove [cluster] etcd or use a build without the tag")

func (n *Node) startCluster() error {
	if n.cluster == nil {
		return nil
	}
	return errNoCluster
}

func routable(ChatInput) bool { return false }

func (n *Node) converseCluster(context.Context, ChatInput) (*actors.Answer, error, bool) {
	return nil, nil, false
}

// agentFilter is the plain filter: a node alone takes every report.
func (n *Node) agentFilter(kind string) string { return wire.AllAgents(kind) }

// relayReport never relays: there is no cluster.
func (n *Node) relayReport(string, wire.Report, []byte) bool { return false }

// remoteOp is unused without a cluster.
type remoteOp struct {
	Op, ID, Answer, By, Note string
}

// remoteResult is unused without a cluster.
type remoteResult struct{}

// The remote ops; no node is asked in this build.
const (
	remoteAnswer   = "question_answer"
	remoteApproval = "approval_get"
	remoteApprove  = "approval_approve"
	remoteDeny     = "approval_deny"
)

// askOthers has nobody to ask.
func (n *Node) askOthers(context.Context, remoteOp) (remoteResult, bool) {
	return remoteResult{}, false
}

// listOthers has nobody to ask.
func (n *Node) listOthers(context.Context, string, int) ([]persistence.Approval, []string, bool) {
	return nil, nil, false
}

// writeRemote is never called in this build.
func writeRemote(http.ResponseWriter, remoteResult) {}

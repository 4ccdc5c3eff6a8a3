//go:build nocluster

package orchestrator

import (
	"context"
	"errors"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
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

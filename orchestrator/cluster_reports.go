//go:build !nocluster

package orchestrator

import (
	"bytes"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// relayName is the actor, on every clustered node, that takes the
// agents' reports the other nodes relay to it.
const relayName = "evoclaw-reports"

// shareGroupPrefix starts the shared-subscription group of a cluster's
// nodes: the broker hands each report to one member of the group.
const shareGroupPrefix = "evoclaw-"

// agentFilter is the topic filter this node subscribes to for the
// agents' messages of kind. A clustered node takes the reports through a
// shared subscription ($share/evoclaw-<cluster>/...): the broker gives
// each report to one node of the cluster, which routes it (relayReport).
// Status and capabilities stay plain subscriptions: they are retained
// (a shared subscription gets no retained message) and every node keeps
// its own view of every agent from them.
func (n *Node) agentFilter(kind string) string {
	f := wire.AllAgents(kind)
	if n.cluster == nil || n.cluster.c == nil || kind != wire.KindReports {
		return f
	}
	return "$share/" + shareGroupPrefix + n.cfg.Cluster.Name + "/" + f
}

// relayReport routes a report the broker delivered to this node; false
// means it is this node's to take. A report answering a call goes to the
// node holding the agent's calls (the owner of the agent's grain,
// cluster_agents.go), which answers the calling node; one answering a
// delegate grant goes to the node that made the grant (its token says
// which); one answering no call (a heartbeat, a tools_list reply) is
// taken here and relayed to every other node, which each keep their own
// view of the agent. A delegate request without a node's token is
// answered here alone.
func (n *Node) relayReport(agentID string, r wire.Report, payload []byte) bool {
	cn := n.cluster
	if cn == nil || cn.c == nil {
		return false
	}
	cn.fromBroker.Add(1)
	tag := reportOwner(r)
	var addrs []string
	switch {
	case r.ReportType == wire.ReportDelegate:
		if tag == "" || tag == n.cfg.NodeID {
			return false
		}
		addrs = cn.c.AddressesOf(tag)
	case answersCall(agentID, r):
		if tag != "" && tag != n.cfg.NodeID && !cn.c.IsMember(tag) {
			// The call's node is gone, and its calls ended with it.
			cn.noOwner.Add(1)
			return true
		}
		owner := cn.c.OwnerOf(agentID, agentKind)
		if owner == "" || owner == n.system.Address() {
			return false
		}
		addrs = []string{owner}
	default:
		if n.relayTo(cn.c.OtherAddresses(), agentID, payload) {
			cn.toAll.Add(1)
		}
		return false
	}
	if len(addrs) == 0 {
		cn.noOwner.Add(1)
		return true
	}
	n.relayTo(addrs, agentID, payload)
	cn.toOwner.Add(1)
	return true
}

// answersCall says whether r answers a call of the tool loop (a result,
// an error, progress, an acceptance; the public agent's ping answer,
// which carries no request_id): the agent's edge actor holds those on
// the agent's owner. Heartbeats, metrics and the answers to an edge
// actor's own tools_list answer no call: every node keeps its own view.
func answersCall(agentID string, r wire.Report) bool {
	switch r.ReportType {
	case wire.ReportHeartbeat, wire.ReportMetric:
		return false
	}
	return !actors.IsToolsListID(agentID, r.RequestID())
}

// relayTo sends a report to the relay actor of each address: the agent
// id, a NUL (never in an id) and the report as the agent published it.
// It says whether there was anyone to send to.
func (n *Node) relayTo(addrs []string, agentID string, payload []byte) bool {
	if len(addrs) == 0 {
		return false
	}
	b := make([]byte, 0, len(agentID)+1+len(payload))
	b = append(append(append(b, agentID...), 0), payload...)
	msg := wrapperspb.Bytes(b)
	for _, a := range addrs {
		n.system.Root.Send(actor.NewPID(a, relayName), msg)
	}
	return true
}

// startRelay spawns the actor taking the reports other nodes relay here.
func (n *Node) startRelay() error {
	_, err := n.system.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		m, ok := c.Message().(*wrapperspb.BytesValue)
		if !ok {
			return
		}
		agentID, r, err := decodeRelayed(m.Value)
		if err != nil {
			n.in.log.Warn("dropping a relayed report", "err", err)
			return
		}
		n.cluster.relayedIn.Add(1)
		n.takeReport(agentID, r)
	}), relayName)
	if err != nil {
		return fmt.Errorf("cluster: spawn the report relay: %w", err)
	}
	return nil
}

// decodeRelayed parses what relayTo sent, with the checks the broker's
// path applies (a valid agent id, a report within the wire's bounds).
func decodeRelayed(b []byte) (string, wire.Report, error) {
	id, payload, ok := bytes.Cut(b, []byte{0})
	if !ok {
		return "", wire.Report{}, fmt.Errorf("relayed report without its agent id")
	}
	agentID := string(id)
	if err := wire.ValidateAgentID(agentID); err != nil {
		return "", wire.Report{}, fmt.Errorf("relayed report: %w", err)
	}
	r, err := wire.DecodeReport(agentID, payload)
	if err != nil {
		return "", wire.Report{}, fmt.Errorf("relayed report of %s: %w", agentID, err)
	}
	return agentID, r, nil
}

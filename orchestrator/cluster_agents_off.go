//go:build nocluster

package orchestrator

// agentHolder is "": without a cluster this node holds every agent's
// calls.
func (n *Node) agentHolder(string) string { return "" }

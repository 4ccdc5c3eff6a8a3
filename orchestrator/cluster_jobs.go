package orchestrator

import "github.com/evoclaw/evoclaw/orchestrator/jobs"

// sharedJobs is where the jobs made through the API or by the model live
// for the whole cluster: the cluster's state (sqld) with [cluster]
// state_url, which every node's scheduler loads and plans. Nil on a node
// alone and in a cluster without state_url, where such a job exists on
// the node that made it only.
func (n *Node) sharedJobs() jobs.SharedStore {
	if n.cluster == nil || n.cluster.shared == nil {
		return nil
	}
	return n.cluster.shared
}

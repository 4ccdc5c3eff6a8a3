//go:build nocluster

package cluster

// Built with the tag nocluster: the protoactor cluster, its gRPC remote
// and the etcd client are left out of the binary. A config with
// [cluster] etcd is refused when the node starts (orchestrator).

// Cluster is never started in this build.
type Cluster struct{}

// Status is empty: there is no membership.
func (c *Cluster) Status() Status { return Status{} }

// Close does nothing.
func (c *Cluster) Close() {}

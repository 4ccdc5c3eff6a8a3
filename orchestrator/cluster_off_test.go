//go:build nocluster

package orchestrator

import (
	"context"
	"errors"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/cluster"
)

// TestClusterRefusedWithoutClustering: a binary built with nocluster
// refuses a [cluster] config at start, saying why.
func TestClusterRefusedWithoutClustering(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), Broker: BrokerConf{Listen: "127.0.0.1:0"}, Cluster: cluster.Config{Etcd: []string{"127.0.0.1:2379"}}}
	n, err := Start(context.Background(), cfg, Options{Provider: failing(errors.New("unused"))})
	if err == nil {
		n.Close()
	}
	if !errors.Is(err, errNoCluster) {
		t.Fatalf("Start = %v, want %v", err, errNoCluster)
	}
}

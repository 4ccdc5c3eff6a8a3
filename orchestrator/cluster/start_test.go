//go:build !nocluster

package cluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestStartWithoutEtcd: a node whose etcd does not answer refuses to
// start with an error naming it, instead of waiting forever.
func TestStartWithoutEtcd(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	dead := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) // nothing listens there
	_, err := Start(sys, "n1", Config{Etcd: []string{dead}, Port: testenv.FreePort(t)}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no etcd endpoint is healthy") || !strings.Contains(err.Error(), dead) {
		t.Fatalf("Start = %v, want an error naming %s", err, dead)
	}
	if _, err := Start(sys, "n1", Config{}, nil, nil); err == nil {
		t.Fatal("Start without etcd endpoints succeeded")
	}
}

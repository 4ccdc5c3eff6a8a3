package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkStart is Start up to a node that answers (HTTP API, broker,
// audit trail, subscriptions), then Close: on a fresh data directory each
// time, and again on one that exists (a restart). Process start-up is not
// in it; `evoclaw bench` measures exec to /healthz.
func BenchmarkStart(b *testing.B) {
	for _, fresh := range []bool{true, false} {
		name := map[bool]string{true: "fresh", false: "restart"}[fresh]
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			for i := 0; b.Loop(); i++ {
				dir := filepath.Join(root, "node")
				if fresh {
					dir = filepath.Join(root, fmt.Sprint(i))
				}
				cfg := Config{DataDir: dir, Broker: BrokerConf{Listen: "127.0.0.1:0"}, HTTP: HTTPConf{Listen: "127.0.0.1:0"}}
				n, err := Start(context.Background(), cfg, Options{Provider: failing(errors.New("unused"))})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				n.Close()
				b.StartTimer()
			}
		})
	}
}

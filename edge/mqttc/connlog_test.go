package mqttc_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
)

// cuttingProxy forwards TCP connections to upstream and cuts each after
// life; it returns its address and the count of connections it cut.
func cuttingProxy(t *testing.T, upstream string, life time.Duration) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var cut atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", upstream)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c) }()
				go func() { _, _ = io.Copy(c, u) }()
				time.Sleep(life)
				cut.Add(1)
			}()
		}
	}()
	return l.Addr().String(), &cut
}

// TestReconnectStormLogsBounded: a broker connection cut again and again
// (here every 50 ms, paho reconnecting at once) no longer writes two log
// lines per cut: the client logs a few and counts the rest.
func TestReconnectStormLogsBounded(t *testing.T) {
	t.Parallel()
	url := mqtttest.StartEmbedded(t)
	addr, cut := cuttingProxy(t, strings.TrimPrefix(url, "tcp://"), 50*time.Millisecond)
	var logs testenv.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: "tcp://" + addr, ClientID: clientID("storm"),
		MaxReconnectInterval: 20 * time.Millisecond, ReconnectJitter: -1,
		Logger: logs.Logger(slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	const cuts = 30
	testenv.Eventually(t, 30*time.Second, func() bool { return cut.Load() >= cuts }, "30 connections cut")
	c.Close()
	lines := strings.Count(logs.String(), "mqtt connection lost") + strings.Count(logs.String(), "mqtt connected")
	if lines == 0 || lines > 6 {
		t.Fatalf("%d connection lines for %d cuts, want a few (at least one, at most 6):\n%s", lines, cut.Load(), logs.String())
	}
}

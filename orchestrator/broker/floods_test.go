package broker_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
)

// TestInvalidPublishTopicsAreRefused: a publish to $SYS/... or to a topic
// with a wildcard is invalid for a client to send. mochi drops it before
// the ACL is asked, silently; it must be handled like any publish outside
// the client's topics: disconnected (MQTT 5: DISCONNECT 0x87 first) and
// logged, for both protocol versions.
func TestInvalidPublishTopicsAreRefused(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, Logger: logs.Logger(slog.LevelDebug)})
	for _, v5 := range []bool{false, true} {
		for _, topic := range []string{"$SYS/broker/clients/connected", "$sys/x", "evoclaw/agents/+/reports", "evoclaw/agents/alex-eye/#"} {
			t.Run(fmt.Sprintf("v5=%v/%s", v5, topic), func(t *testing.T) {
				conn, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "alex-pw", V5: v5})
				if rc != 0 {
					t.Fatalf("CONNACK %d", rc)
				}
				mqtttest.RawPublishQoS1(t, conn, topic, []byte("x"), v5)
				a := mqtttest.RawAnswer(conn, 3*time.Second)
				if !a.Closed {
					t.Fatalf("publish to %q: answer %+v, want the connection closed", topic, a)
				}
				if v5 && (a.Type != 0xe0 || a.Reason != 0x87) {
					t.Errorf("MQTT 5 publish to %q: answer %+v, want DISCONNECT with reason 0x87 (not authorized)", topic, a)
				}
				if !v5 && a.Type != 0 {
					t.Errorf("MQTT 3.1.1 publish to %q: answer %+v, want no packet", topic, a)
				}
				wantLog(t, &logs, "mqtt access denied", "op=publish", "topic="+topic)
			})
		}
	}
}

// TestDeniedPublishesDoNotFloodTheLog: ten denied 1 MB publishes and a
// hundred small ones, from an agent that reconnects after each, add a
// bounded number of bounded lines to the log: no payload bytes, no line
// over 2 KB, at most the refusal burst (plus a few unlimited lines of our
// own) in one window, at the default level (debug lines are cut but not
// counted).
func TestDeniedPublishesDoNotFloodTheLog(t *testing.T) {
	t.Parallel()
	var logs testenv.Buffer
	log := logs.Logger(slog.LevelInfo)
	b := start(t, broker.Options{Listen: "127.0.0.1:0", Users: fleet, Logger: log, MaxPacketBytes: 2 << 20})
	big := bytes.Repeat([]byte("A"), 1<<20)
	longTopic := wire.ReportsTopic("bob") + "/" + strings.Repeat("t", 4000)
	for i := 0; i < 110; i++ {
		for _, v5 := range []bool{false, true} {
			conn, rc := mqtttest.DialRaw(t, b.Addr(), mqtttest.RawConnect{ClientID: "evoclaw-alex-eye", Username: "alex-eye", Password: "alex-pw", V5: v5})
			if rc != 0 {
				t.Fatalf("CONNACK %d", rc)
			}
			payload, topic := []byte("small"), longTopic
			if i < 10 {
				payload, topic = big, wire.ReportsTopic("bob")
			}
			mqtttest.RawPublishQoS1(t, conn, topic, payload, v5)
			if !mqtttest.RawClosed(conn, 5*time.Second) {
				t.Fatal("denied publish did not end the connection")
			}
			conn.Close()
		}
	}
	// The broker logs after it closed the connection: give it a moment.
	testenv.Eventually(t, 5*time.Second, func() bool { return strings.Contains(logs.String(), "mqtt access denied") }, "a refusal logged")
	time.Sleep(200 * time.Millisecond) // let late lines of the last clients land before measuring
	out := logs.String()
	t.Logf("log after 220 denied publishes (20 of 1 MiB): %d bytes, %d lines", len(out), strings.Count(out, "\n"))
	if len(out) > 64<<10 {
		t.Errorf("log grew by %d bytes", len(out))
	}
	warn := 0
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 2048 {
			t.Errorf("log line of %d bytes: %.200s...", len(line), line)
		}
		if strings.Contains(line, "AAAAAAAA") || strings.Contains(line, "65 65 65") {
			t.Errorf("payload bytes in the log: %.200s...", line)
		}
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warn++
		}
	}
	if warn > 25 {
		t.Errorf("%d WARN/ERROR lines in one 10 s window, want at most about 20", warn)
	}
}

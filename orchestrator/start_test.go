package orchestrator

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// The audit trail opens beside the broker and the MQTT session. When it
// cannot open, Start fails with the audit trail's error (as when it opened
// first), and what started beside it is stopped: the broker's port is
// free again and the HTTP API never listened.
func TestStartFailsWhenTheAuditTrailCannotOpen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"not a database", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, AuditFile), []byte(strings.Repeat("not sqlite\n", 400)), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory in its place", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, AuditFile), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.spoil(t, dir)
			brokerAddr, httpAddr := freeAddr(t), freeAddr(t)
			cfg := Config{DataDir: dir, Broker: BrokerConf{Listen: brokerAddr}, HTTP: HTTPConf{Listen: httpAddr}}
			n, err := Start(context.Background(), cfg, Options{Provider: failing(errors.New("unused"))})
			if err == nil {
				n.Close()
				t.Fatal("Start succeeded on a broken audit trail")
			}
			if !strings.Contains(err.Error(), "audit trail") {
				t.Fatalf("Start = %v, want the audit trail's error", err)
			}
			for _, addr := range []string{brokerAddr, httpAddr} {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatalf("%s still taken after the failed start: %v", addr, err)
				}
				ln.Close()
			}
			if _, err := os.Stat(filepath.Join(dir, HTTPAddrFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the HTTP API wrote its address though the node never started: %v", err)
			}
		})
	}
}

// A node that starts records its start in the audit trail before it is
// returned, and answers ready.
func TestStartRecordsItsStart(t *testing.T) {
	node, _, _ := startAPI(t, nil, Options{Provider: failing(errors.New("unused"))})
	res, err := sqlite.QueryReadOnly(context.Background(), node.AuditPath(), "SELECT kind FROM events WHERE kind = ?", persistence.EventNodeStart)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("%s events = %v, want one", persistence.EventNodeStart, res.Rows)
	}
	if r := node.Ready(); !r.Checks[1].OK {
		t.Errorf("broker check after Start: %+v", r.Checks[1])
	}
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
}

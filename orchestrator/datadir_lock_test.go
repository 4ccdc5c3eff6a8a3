//go:build unix

package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestSecondNodeOnADataDirectoryIsRefused: a second node on a data
// directory in use fails to start with sqlite.ErrInUse, before it writes
// to the audit trail or replaces the API address file; the first node's
// chain stays whole.
func TestSecondNodeOnADataDirectoryIsRefused(t *testing.T) {
	first, _, _ := startAPI(t, nil, Options{Provider: mustScript(t, `{"name": "x", "turns": [{"content": "hi"}]}`)})
	dir := first.cfg.DataDir
	addrFile := filepath.Join(dir, HTTPAddrFile)
	before, err := os.ReadFile(addrFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{DataDir: dir, Broker: BrokerConf{Listen: "127.0.0.1:0"}, HTTP: HTTPConf{Listen: "127.0.0.1:0"}}
	second, err := Start(context.Background(), cfg, Options{Provider: mustScript(t, `{"name": "x", "turns": [{"content": "hi"}]}`)})
	if err == nil {
		second.Close()
		t.Fatal("a second node started on a data directory in use")
	}
	if !errors.Is(err, sqlite.ErrInUse) {
		t.Fatalf("second start: %v, want ErrInUse", err)
	}
	if after, _ := os.ReadFile(addrFile); string(after) != string(before) {
		t.Fatalf("the API address file changed: %q -> %q", before, after)
	}
	if _, err := first.Converse(context.Background(), ChatInput{ConversationID: "c1", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := sqlite.VerifyChain(context.Background(), filepath.Join(dir, AuditFile))
	if err != nil || rep.Verified == 0 {
		t.Fatalf("verify after the refused start: %+v %v", rep, err)
	}
}

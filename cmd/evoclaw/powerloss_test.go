package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestServeKilledWithFullSync is the process-level half of the power-cut
// promise of audit_sync = "full" (docs/CONFIG.md): a node configured so
// is SIGKILLed while chats are being written; afterwards the database
// opens, `evoclaw audit verify` passes and every chat the API acknowledged
// is stored with its answer. persistence/sqlite's crash test does the same
// for every record kind at the store; this one checks that the setting of
// the file reaches the store and that the command an operator runs agrees.
// A SIGKILL keeps the page cache: that fsync really reaches the medium is
// SQLite's synchronous=FULL, not something a test on one machine can show.
func TestServeKilledWithFullSync(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and kills a node process")
	}
	bin := evoclawBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "node")
	// A model to answer the chats: a node with no [llm] refuses them.
	writeTestFile(t, filepath.Join(dir, "transcript.json"), `{"name":"fleet","turns":[{"content":"The fleet is fine."}]}`)
	writeTestFile(t, filepath.Join(dir, "evoclaw.toml"), scriptedServeTOML("audit_sync = \"full\"\n", filepath.Join(dir, "transcript.json"), ""))
	node, _ := startProc(t, procSpec{Ready: serveReady}, "serve", "--config", filepath.Join(dir, "evoclaw.toml"), "--data-dir", data)
	client, err := (&nodeFlags{dataDir: data}).client()
	if err != nil {
		t.Fatal(err)
	}

	// Four writers chat until the node dies; the test kills it once 40
	// chats were acknowledged, with more in flight.
	const want = 40
	var (
		mu    sync.Mutex // guards acked
		acked []string
	)
	enough := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				a, err := client.chat(ctx, "", "How is the fleet?", chatEvents{})
				if err != nil {
					return // the node is gone
				}
				mu.Lock()
				acked = append(acked, a.ConversationID)
				if len(acked) >= want {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		})
	}
	select {
	case <-enough:
	case <-ctx.Done():
		t.Fatalf("fewer than %d chats acknowledged in a minute:\n%s", want, node.stderr.String())
	}
	node.kill()
	wg.Wait()

	out, err := exec.Command(bin, "audit", "verify", "--data-dir", data).CombinedOutput()
	if err != nil {
		t.Fatalf("audit verify after SIGKILL: %v\n%s", err, out)
	}
	res, err := sqlite.QueryReadOnly(context.Background(), filepath.Join(data, "audit.db"),
		"SELECT conversation_id FROM messages GROUP BY conversation_id HAVING sum(role = 'user') >= 1 AND sum(role = 'assistant') >= 1")
	if err != nil {
		t.Fatalf("query after SIGKILL: %v", err)
	}
	stored := map[string]bool{}
	for _, r := range res.Rows {
		stored[r[0].(string)] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range acked {
		if !stored[c] {
			t.Errorf("acknowledged chat %s has no stored question and answer after SIGKILL", c)
		}
	}
	t.Logf("%d chats acknowledged, %d conversations stored with their answer; %s", len(acked), len(stored), strings.TrimSpace(string(out)))
}

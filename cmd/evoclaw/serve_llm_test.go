package main

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestServeSaysWhatTheFirstModelCheckFound: a model server that takes the
// connection and never answers holds the node's first check of it for
// probe_timeout, so "ready" is printed before the check ends; what the
// check found is printed under it when it ends, as it would have been at
// once for a server that refused the connection. Before, stdout said
// "ready" and nothing more: only a log line, among many, told.
func TestServeSaysWhatTheFirstModelCheckFound(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0") // never accepts: connections wait in its backlog
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "evoclaw.toml")
	writeTestFile(t, conf, fmt.Sprintf(`[broker]
listen = "127.0.0.1:0"
[http]
listen = "127.0.0.1:0"
[llm]
provider = "openai"
base_url = "http://%s/v1"
model = "m"
probe_timeout = "1s"
`, silent.Addr()))
	start := time.Now()
	startProc(t, procSpec{Within: 20 * time.Second,
		Ready: regexp.MustCompile(`^evoclaw orchestrator: no LLM link can answer now: the server of openai m is not answering since .*: no answer within probe_timeout 1s`)},
		"serve", "--config", conf, "--data-dir", filepath.Join(dir, "data"))
	if d := time.Since(start); d < time.Second {
		t.Fatalf("said after %s, before the check could end", d)
	}
}

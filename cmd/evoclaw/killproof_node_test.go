//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestNodeToolsEndWithTheNode: the node is SIGKILLed while its own bash
// tool runs a loop that left a background job in its process group. The
// loop dies with the node; the background job is killed when the node
// starts again, and the cut run is audited once, as interrupted, with its
// tool and parameters, however often the node restarts. Before, the
// background job ran on and the run had no tool_calls row at all.
func TestNodeToolsEndWithTheNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs and kills a node process")
	}
	dir := t.TempDir()
	ws, data := filepath.Join(dir, "ws"), filepath.Join(dir, "node")
	marker := filepath.Join(ws, "bash.marker")
	bg := evoclawtest.BgMarker(marker)
	args, err := json.Marshal(map[string]any{"command": evoclawtest.BashLoop(marker, true), "timeout_ms": 60000})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "transcript.json"), fmt.Sprintf(`{"name":"cut","turns":[
	  {"content":"","tool_calls":[{"id":"a","name":"bash","arguments":%s}]},
	  {"content":"done"}]}`, args))
	writeTestFile(t, filepath.Join(dir, "evoclaw.toml"), scriptedServeTOML("", filepath.Join(dir, "transcript.json"),
		fmt.Sprintf("[skills]\npermissions = [\"shell\"]\n[builtin]\ngroups = [\"coding\"]\nworkspace = %q\nsandbox = \"none\"\n", ws)))
	serve := func() *proc {
		p, _ := startProc(t, procSpec{Ready: serveReady}, "serve", "--config", filepath.Join(dir, "evoclaw.toml"), "--data-dir", data)
		return p
	}
	query := func(q string) [][]any {
		t.Helper()
		res, err := sqlite.QueryReadOnly(context.Background(), filepath.Join(data, "audit.db"), q)
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows
	}

	node := serve()
	client, err := (&nodeFlags{dataDir: data}).client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { _, _ = client.chat(ctx, "cut", "loop", chatEvents{}) }() // ends with the node
	testenv.Eventually(t, 20*time.Second, func() bool { return evoclawtest.Size(marker) > 0 && evoclawtest.Size(bg) > 0 },
		"bash and its background job to start writing")
	// The process group is committed just after the tool starts; a kill
	// before that commit leaves the background job unfound (SECURITY.md).
	testenv.Eventually(t, 20*time.Second, func() bool {
		return len(query(`SELECT 1 FROM request_log WHERE state = 'running' AND tool = 'bash' AND pgid IS NOT NULL`)) == 1
	}, "the run and its process group recorded")

	node.kill()
	testenv.Eventually(t, toolDeathBound, func() bool { return len(evoclawtest.PidsWith(marker)) == 0 },
		fmt.Sprintf("bash to die with the node (left: %v)", evoclawtest.PidsWith(marker)))
	if !evoclawtest.Grows(bg, time.Second) {
		t.Fatal("the background job did not outlive the node: nothing left for the restart to do")
	}

	for range 2 {
		node = serve()
		testenv.Eventually(t, toolDeathBound, func() bool { return len(evoclawtest.PidsWith(bg)) == 0 },
			fmt.Sprintf("the background job to be killed at the restart (left: %v)", evoclawtest.PidsWith(bg)))
		testenv.Eventually(t, 10*time.Second, func() bool {
			return len(query(`SELECT 1 FROM request_log WHERE state = 'running'`)) == 0
		}, "no run left running")
		rows := query(`SELECT tool, side, status, error_type, conversation_id, json_extract(params, '$.timeout_ms') FROM tool_calls WHERE tool = 'bash'`)
		if got, want := fmt.Sprint(rows), "[[bash orchestrator error interrupted cut 60000]]"; got != want {
			t.Fatalf("audit rows of the cut run: %s, want %s", got, want)
		}
		node.kill()
	}
}

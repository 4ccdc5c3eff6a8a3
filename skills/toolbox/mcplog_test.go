package toolbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/bits"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/skills/mcptools"
)

// churnEnv makes the test binary a stdio MCP server (churnServer) instead
// of running the tests.
const churnEnv = "EVOCLAW_TOOLBOX_TEST_CHURN"

// churnBad is how many tools of each listing no agent can offer.
const churnBad = 300

func TestMain(m *testing.M) {
	if os.Getenv(churnEnv) != "" {
		churnServer()
		return
	}
	os.Exit(m.Run())
}

// churnServer is a hostile MCP server: its tools change at every listing
// (one valid tool named after it, and churnBad whose names are not valid
// tool names), and it says so (notifications/tools/list_changed) every
// millisecond, without end.
func churnServer() {
	var mu sync.Mutex
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		defer mu.Unlock()
		os.Stdout.Write(append(b, '\n'))
	}
	listings := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result}) }
		switch m.Method {
		case "initialize":
			reply(map[string]any{"protocolVersion": m.Params.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
				"serverInfo":   map[string]any{"name": "churn", "version": "1"}})
		case "notifications/initialized":
			go func() {
				for {
					time.Sleep(time.Millisecond)
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
				}
			}()
		case "tools/list":
			listings++
			tools := []any{map[string]any{"name": fmt.Sprintf("t%d", listings), "inputSchema": map[string]any{"type": "object"}}}
			for i := range churnBad {
				tools = append(tools, map[string]any{"name": fmt.Sprintf("bad tool %d", i), "inputSchema": map[string]any{"type": "object"}})
			}
			reply(map[string]any{"tools": tools})
		default:
			if len(m.ID) > 0 {
				reply(map[string]any{})
			}
		}
	}
}

// TestChurningMCPServerLogsBounded: a server whose tools change at every
// listing, each listing with hundreds of tools that cannot be offered,
// made the box log a line per such tool at each change (500 lines a
// second against a real node). The changes are now logged within
// mcptools' bound on those lines (each at the 1st, 2nd, 4th... change),
// each line counting the tools not offered and giving the first reason;
// the new tools are offered all the same. The start names the first few
// tools not offered, and counts the rest.
func TestChurningMCPServerLogsBounded(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	box, err := New(Config{
		MCPServers: map[string]mcptools.ServerConfig{"churn": {Command: exe, Env: []string{churnEnv + "=1"}}},
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	box.ConnectMCP(context.Background())
	t.Cleanup(func() { box.Close() })
	start := strings.Count(logs.String(), "\n")
	// The start names the first few tools not offered and counts the rest.
	if start > 3+maxToolErrLines || !strings.Contains(logs.String(), fmt.Sprintf("count=%d", churnBad-maxToolErrLines)) {
		t.Errorf("the start wrote %d lines about %d tools not offered:\n%s", start, churnBad, logs.String())
	}
	// Listings are at least mcptools.RelistInterval apart: wait for a few
	// changes by the tools offered.
	seen := map[string]bool{}
	testenv.Eventually(t, 20*time.Second, func() bool {
		time.Sleep(50 * time.Millisecond) // one look at the offer per 50ms
		for _, n := range box.Tools.Names() {
			seen[n] = true
		}
		return len(seen) >= 4
	}, "the server's changing tools offered")
	box.Close()
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")[start:]
	changes := len(seen) - 1
	// At most one line per change logged (1st, 2nd, 4th...), and the
	// lines about the server going away at Close.
	var changeLines int
	for _, l := range lines {
		if strings.Contains(l, "tools changed") {
			changeLines++
			if !strings.Contains(l, fmt.Sprintf("not_offered=%d", churnBad)) || !strings.Contains(l, "bad tool") {
				t.Errorf("a change line without the count of tools not offered and the first reason: %s", l)
			}
		}
	}
	t.Logf("%d changes, %d log lines after the start:\n%s", changes, len(lines), strings.Join(lines, "\n"))
	if bound := bits.Len(uint(changes)) + 1; changeLines < 1 || len(lines) > bound+4 {
		t.Errorf("%d log lines (%d on changes) for %d changes of a server listing %d tools it cannot offer each time, want 1 to %d:\n%s",
			len(lines), changeLines, changes, churnBad, bound+4, strings.Join(lines, "\n"))
	}
}

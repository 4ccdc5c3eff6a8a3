package mcptools

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/internal/proctest"
)

// serverBin is the test MCP server and hostileBin the misbehaving one
// (testdata/hostile), built once by TestMain.
var serverBin, hostileBin string

func TestMain(m *testing.M) {
	if cmd := os.Getenv(agentEnv); cmd != "" {
		actAsAgent(strings.Fields(cmd))
		return
	}
	dir, err := os.MkdirTemp("", "mcpserver-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcpserver")
	hostileBin = filepath.Join(dir, "hostile")
	for bin, pkg := range map[string]string{serverBin: "./testdata/mcpserver", hostileBin: "./testdata/hostile"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build test MCP server %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// agentEnv makes the test binary act as an agent: it connects to the stdio
// server whose command line (space-separated) the variable holds, prints
// "connected" and waits to be killed.
const agentEnv = "EVOCLAW_MCP_TEST_AGENT"

// groupsEnv is the Options.GroupFile of an agent run by agentEnv.
const groupsEnv = "EVOCLAW_MCP_TEST_GROUPS"

func actAsAgent(cmd []string) {
	set, errs := ConnectWith(context.Background(), map[string]ServerConfig{"h": {Command: cmd[0], Args: cmd[1:]}},
		Options{GroupFile: os.Getenv(groupsEnv)})
	if len(errs) > 0 {
		fmt.Println(errs)
		os.Exit(1)
	}
	fmt.Println("connected")
	time.Sleep(time.Hour) // the test kills this process first
	set.Close()
}

// startHTTP runs the test server in HTTP mode and returns its URL.
func startHTTP(t *testing.T) string {
	t.Helper()
	line := proctest.StartLine(t, exec.Command(serverBin, "-http"))
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("unexpected server line %q", line)
	}
	return url
}

func TestMCPTransports(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) ServerConfig
	}{
		{"stdio", func(*testing.T) ServerConfig { return ServerConfig{Command: serverBin, TimeoutMS: 500} }},
		{"http", func(t *testing.T) ServerConfig { return ServerConfig{URL: startHTTP(t), TimeoutMS: 500} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, errs := Connect(context.Background(), map[string]ServerConfig{"lab": tc.cfg(t)}, nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			t.Cleanup(func() {
				if err := set.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			tools, errs := set.Tools()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), "lab__bad.name") {
				t.Errorf("tool errors = %v, want one for lab__bad.name", errs)
			}
			ts := skills.NewToolset(nil, skills.ExecOptions{})
			if err := ts.Add(tools...); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(ts.Names(), ","); got != "lab__add,lab__echo,lab__fail,lab__image,lab__slow" {
				t.Fatalf("names = %s", got)
			}
			for _, d := range ts.Defs() {
				if d.Evoclaw.TimeoutMS != 500 {
					t.Errorf("%s advertises timeout_ms %d, want the server's 500", d.Name, d.Evoclaw.TimeoutMS)
				}
				if d.Name == "lab__add" {
					props, _ := d.Parameters["properties"].(map[string]any)
					if d.Evoclaw.Source != skills.SourceMCP || d.Evoclaw.Skill != "lab" || props["a"] == nil || props["b"] == nil {
						t.Errorf("lab__add definition = %+v", d)
					}
				}
			}
			ctx := context.Background()
			if out := ts.Call(ctx, "lab__echo", map[string]any{"text": "hi"}); out.ErrorType() != "" || out.Text() != "echo: hi" {
				t.Errorf("echo = %+v", out)
			}
			if out := ts.Call(ctx, "lab__add", map[string]any{"a": 2, "b": 3.5}); out.Text() != "5.5" {
				t.Errorf("add = %+v", out)
			}
			if out := ts.Call(ctx, "lab__add", map[string]any{"a": "x"}); out.ErrorType() != wire.ErrInvalidParams && out.ErrorType() != wire.ErrExecutionFailed {
				t.Errorf("add with bad args = %+v", out)
			}
			out := ts.Call(ctx, "lab__fail", nil)
			if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.Wire("lab__fail").Error, "unplugged") {
				t.Errorf("fail = %+v", out)
			}
			out = ts.Call(ctx, "lab__image", nil)
			if len(out.Content) != 1 || out.Content[0].Kind != skills.KindImage || out.Content[0].MIMEType != "image/png" {
				t.Fatalf("image = %+v", out)
			}
			if b, err := base64.StdEncoding.DecodeString(out.Content[0].Data); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
				t.Errorf("image data is not a PNG: %v", err)
			}
			start := time.Now()
			if out := ts.Call(ctx, "lab__slow", nil); out.ErrorType() != wire.ErrTimeout {
				t.Errorf("slow = %+v", out)
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("timeout of 500 ms took %v", el)
			}
			// A caller's shorter deadline applies, and the error says so.
			short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
			out = ts.Call(short, "lab__slow", nil)
			cancel()
			if msg := out.Wire("lab__slow").Error; out.ErrorType() != wire.ErrTimeout || strings.Contains(msg, "500ms") || !strings.Contains(msg, "ms") {
				t.Errorf("slow under a 150 ms deadline = %+v", out)
			}
			// The session still works after a timed-out call.
			if out := ts.Call(ctx, "lab__echo", map[string]any{"text": "again"}); out.Text() != "echo: again" {
				t.Errorf("echo after timeout = %+v", out)
			}
		})
	}
}

func TestMCPConnectErrors(t *testing.T) {
	set, errs := Connect(context.Background(), map[string]ServerConfig{
		"good":    {Command: serverBin},
		"missing": {Command: filepath.Join(t.TempDir(), "nope")},
		"both":    {Command: serverBin, URL: "http://127.0.0.1:1/mcp"},
		"neither": {},
		"a__b":    {Command: serverBin},
		"good_":   {Command: serverBin}, // its tool "t" would be good's tool "_t"
		"refused": {URL: "http://127.0.0.1:1/mcp"},
	}, nil)
	defer set.Close()
	if len(errs) != 6 {
		t.Fatalf("errors = %v, want 6", errs)
	}
	tools, _ := set.Tools()
	if len(tools) == 0 || !strings.HasPrefix(tools[0].Tool.Name, "good__") {
		t.Fatalf("the good server's tools are missing: %v", tools)
	}
}

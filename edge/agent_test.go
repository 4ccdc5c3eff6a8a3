package edge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// runAgent runs a until the test ends and returns once it is ready,
// failing the test if that takes longer than within. stop ends it early
// and returns what Run returned; later calls return the same. A Run error
// fails the test.
func runAgent(t *testing.T, a *Agent, within time.Duration) (stop func() error) {
	t.Helper()
	ready := make(chan struct{})
	a.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var (
		once   sync.Once
		runErr error
	)
	stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("agent Run: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		done <- err // for stop
		t.Fatalf("agent stopped: %v", err)
	case <-time.After(within):
		t.Fatalf("agent not ready within %v", within)
	}
	return stop
}

// startAgent runs agent pi-t with the test skills (tune may change its
// config) on an embedded broker and returns a fake orchestrator for it.
func startAgent(t *testing.T, tune func(*Config)) *mqtttest.Commander {
	t.Helper()
	url := mqtttest.StartEmbedded(t)
	skills, err := filepath.Abs("../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{AgentID: "pi-t", DataDir: t.TempDir(), MQTT: MQTTConf{Broker: url}, Skills: SkillConf{Dirs: []string{skills}}}
	if tune != nil {
		tune(&cfg)
	}
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, a, 10*time.Second)
	return mqtttest.NewCommander(t, mqttc.Options{BrokerURL: url, ClientID: "fake-orchestrator"}, "pi-t")
}

func TestAgentAnswersEveryCommandKind(t *testing.T) {
	p := startAgent(t, nil)
	tests := []struct {
		name, raw, id string
		reportType    string
		check         func(t *testing.T, r wire.Report)
	}{
		{"ping", `{"command":"ping","payload":{},"request_id":"p1"}`, "p1", wire.ReportResult, func(t *testing.T, r wire.Report) {
			var pr wire.PingResult
			if json.Unmarshal(r.Payload, &pr) != nil || !pr.Pong {
				t.Fatalf("ping payload %s", r.Payload)
			}
		}},
		{"tools_list", `{"command":"tools_list","request_id":"tl"}`, "tl", wire.ReportResult, func(t *testing.T, r wire.Report) {
			l, err := wire.DecodeToolsList(r)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range l.Tools {
				names = append(names, tool.Name)
			}
			if !strings.Contains(strings.Join(names, ","), "count") || !strings.Contains(strings.Join(names, ","), "hang") {
				t.Fatalf("tools %v", names)
			}
		}},
		{"tool success", `{"command":"tool","payload":{"tool":"echo_args","parameters":{"message":"hi"}},"request_id":"t1"}`, "t1", wire.ReportResult,
			func(t *testing.T, r wire.Report) {
				res, err := wire.DecodeToolResult(r)
				if err != nil || res.Status != wire.StatusSuccess || !strings.Contains(res.Result, `"message":"hi"`) {
					t.Fatalf("result %+v %v", res, err)
				}
			}},
		{"unknown tool", `{"command":"tool","payload":{"tool":"nope"},"request_id":"t2"}`, "t2", wire.ReportResult, toolError(wire.ErrNotFound)},
		{"failing tool", `{"command":"tool","payload":{"tool":"fail"},"request_id":"t3"}`, "t3", wire.ReportResult, toolError(wire.ErrExecutionFailed)},
		{"missing parameter", `{"command":"tool","payload":{"tool":"count","parameters":{}},"request_id":"t4"}`, "t4", wire.ReportResult, toolError(wire.ErrInvalidParams)},
		{"tool timeout", `{"command":"tool","payload":{"tool":"sleepy","parameters":{"seconds":5},"timeout_ms":200},"request_id":"t5"}`, "t5", wire.ReportResult, toolError(wire.ErrTimeout)},
		{"payload without tool", `{"command":"tool","payload":{},"request_id":"t6"}`, "t6", wire.ReportResult, toolError(wire.ErrInvalidParams)},
		{"unknown command", `{"command":"trade","payload":{},"request_id":"u1"}`, "u1", wire.ReportError, errorPayload(wire.ErrInvalidCommand, "unknown command: trade")},
		{"prompt without a model", `{"command":"prompt","payload":{"prompt":"hi"},"request_id":"pr"}`, "pr", wire.ReportError, errorPayload(wire.ErrInvalidCommand, "no language model")},
		{"malformed with salvageable id", `{"command":7,"request_id":"m1"}`, "m1", wire.ReportError, errorPayload(wire.ErrInvalidCommand, "want string")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.Send(tt.raw)
			r := p.Await(tt.id)
			if r.ReportType != tt.reportType || r.AgentID != "pi-t" {
				t.Fatalf("report %+v", r)
			}
			tt.check(t, r)
		})
	}
}

func toolError(want wire.ErrorType) func(*testing.T, wire.Report) {
	return func(t *testing.T, r wire.Report) {
		t.Helper()
		res, err := wire.DecodeToolResult(r)
		if err != nil || res.Status != wire.StatusError || res.ErrorType != want || res.Error == "" {
			t.Fatalf("result %+v %v, want %s", res, err, want)
		}
	}
}

func errorPayload(want wire.ErrorType, text string) func(*testing.T, wire.Report) {
	return func(t *testing.T, r wire.Report) {
		t.Helper()
		e, err := wire.DecodeErrorPayload(r)
		if err != nil || e.ErrorType != want || !strings.Contains(e.Error, text) {
			t.Fatalf("error payload %+v %v, want %s mentioning %q", e, err, want, text)
		}
	}
}

func TestSaturatedAgentAnswersAtOnce(t *testing.T) {
	p := startAgent(t, func(c *Config) { c.Tools.MaxConcurrent = 1; c.Tools.QueueLen = 1 })
	// One runs, one waits, the third finds the queue full.
	p.Send(`{"command":"tool","payload":{"tool":"sleepy","parameters":{"seconds":1}},"request_id":"s1"}`)
	p.Send(`{"command":"tool","payload":{"tool":"sleepy","parameters":{"seconds":1}},"request_id":"s2"}`)
	p.Send(`{"command":"tool","payload":{"tool":"sleepy","parameters":{"seconds":1}},"request_id":"s3"}`)
	var busy int
	for _, id := range []string{"s1", "s2", "s3"} {
		r := p.Await(id)
		if r.ReportType == wire.ReportError {
			if e, err := wire.DecodeErrorPayload(r); err == nil && strings.Contains(e.Error, "saturated") {
				busy++
			}
		}
	}
	if busy != 1 {
		t.Fatalf("%d commands refused as saturated, want exactly 1", busy)
	}
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"minimal", "agent_id = \"pi-1\"\n[skills]\ndirs = [\"s\"]\n", ""},
		{"unknown key", "agent_id = \"pi-1\"\ncapabilites = \"typo\"\n", "unknown keys: capabilites"},
		{"bad id", "agent_id = \"pi/1\"\n", "agent_id"},
		{"missing id", "", "agent id is empty"},
		{"bad duration", "agent_id = \"a\"\nheartbeat_interval = \"often\"\n", "duration"},
		{"timeouts inverted", "agent_id = \"a\"\n[tools]\ndefault_timeout = \"10m\"\nmax_timeout = \"1m\"\n", "exceeds"},
		{"bad sync", "agent_id = \"a\"\naudit_sync = \"maybe\"\n", "audit_sync"},
		{"unknown llm provider", "agent_id = \"a\"\n[llm]\nprovider = \"gpt\"\n", "llm.provider"},
		{"openai without model", "agent_id = \"a\"\n[llm]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n", "llm.model"},
		{"scripted without transcript", "agent_id = \"a\"\n[llm]\nprovider = \"scripted\"\n", "llm.transcript"},
		{"mcp server without command or url", "agent_id = \"a\"\n[tools.mcp_servers.fs]\nargs = [\"-v\"]\n", "tools.mcp_servers.fs: set exactly one of command and url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c, ok := loadConfig(t, dir, tt.body, tt.want)
			if ok && (c.Skills.Dirs[0] != filepath.Join(dir, "s") || c.MQTT.Broker != DefaultBroker ||
				c.HeartbeatInterval.Duration != DefaultHeartbeatInterval || c.Capabilities != "") {
				t.Fatalf("config %+v", c)
			}
		})
	}
}

// A relative --config: every relative path in the file is relative to the
// file, not to the working directory, and the agent's tools start.
func TestLoadConfigRelativeToTheFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	if err := os.MkdirAll(filepath.Join(conf, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "agent_id = \"pi-1\"\ndata_dir = \"data\"\n[skills]\ndirs = [\"skills\"]\n[builtin]\ngroups = [\"read-only\"]\nworkspace = \"ws\"\n"
	if err := os.WriteFile(filepath.Join(conf, "agent.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	c, err := LoadConfig(filepath.Join("conf", "agent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]string{"data_dir": c.DataDir, "workspace": c.Builtin.Workspace, "skills": c.Skills.Dirs[0]} {
		if !filepath.IsAbs(got) || !strings.HasPrefix(got, conf) {
			t.Errorf("%s = %q, want a path under %s", what, got, conf)
		}
	}
	box, err := NewToolbox(c, nil)
	if err != nil {
		t.Fatalf("tools of a config loaded by a relative path: %v", err)
	}
	box.Close()
}

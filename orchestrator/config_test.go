package orchestrator

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// A relative --config: relative paths in the file are relative to the
// file, not to the working directory.
func TestLoadConfigRelativeToTheFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	if err := os.MkdirAll(filepath.Join(conf, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "data_dir = \"data\"\n[skills]\ndirs = [\"skills\"]\n[builtin]\ngroups = [\"read-only\"]\nworkspace = \"ws\"\n"
	if err := os.WriteFile(filepath.Join(conf, "evoclaw.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	c, err := LoadConfig(filepath.Join("conf", "evoclaw.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]string{"data_dir": c.DataDir, "workspace": c.Builtin.Workspace, "skills": c.Skills.Dirs[0]} {
		if !filepath.IsAbs(got) || !strings.HasPrefix(got, conf) {
			t.Errorf("%s = %q, want a path under %s", what, got, conf)
		}
	}
}

// The keys of the orchestrator's own tools are read as an agent's are: the
// remote key files relative to the file, every MCP server checked.
func TestConfigToolKeys(t *testing.T) {
	dir := t.TempDir()
	c, _ := loadConfig(t, dir, "[builtin]\ngroups = [\"remote\"]\n[builtin.remote]\naddr = \"pi:22\"\nuser = \"pi\"\n"+
		"key_file = \"keys/id\"\nknown_hosts = \"/etc/ssh/known_hosts\"\ndir = \"/home/pi\"\n", "")
	if r := c.Builtin.Remote; r == nil || r.KeyFile != filepath.Join(dir, "keys", "id") || r.KnownHosts != "/etc/ssh/known_hosts" {
		t.Fatalf("builtin.remote = %+v", r)
	}
	loadConfig(t, t.TempDir(), "[tools.mcp_servers.fs]\nargs = [\"-v\"]\n", "tools.mcp_servers.fs: set exactly one of command and url")
}

// TestConfigListenAddresses: a listener's address that is not host:port
// with a valid port is refused when the file is read, naming its key.
// Before, "[http] listen = 127.0.0.1:99999" was refused only by the
// listener, halfway through the start, as "http api: listen tcp: address
// 99999: invalid port", and "[broker] listen = nonsense" without its key.
func TestConfigListenAddresses(t *testing.T) {
	tests := []struct{ body, want string }{
		{"[http]\nlisten = \"127.0.0.1:99999\"\n", `http.listen: "127.0.0.1:99999": want HOST:PORT`},
		{"[http]\nlisten = \"8787\"\n", `http.listen: "8787": want HOST:PORT`},
		{"[broker]\nlisten = \"nonsense\"\n", `broker.listen: "nonsense": want HOST:PORT`},
		{"[broker]\ntls_listen = \":-1\"\n", `broker.tls_listen: ":-1": want HOST:PORT`},
		{"[http]\nlisten = \"off\"\n[broker]\nlisten = \"[::1]:0\"\n", ""},
		{"[http]\nlisten = \"localhost:8787\"\n[broker]\nlisten = \":1883\"\n", ""},
	}
	for _, tt := range tests {
		loadConfig(t, t.TempDir(), tt.body, tt.want)
	}
}

// TestConfigNegativeValues: a negative count, size or duration that the
// node would take as its default without a word, or refuse only at start
// without the key, is refused when the file is read, naming the key.
func TestConfigNegativeValues(t *testing.T) {
	tests := []struct{ body, want string }{
		{"[audit]\nhot_capacity = -5\n", "audit.hot_capacity: -5 must not be negative"},
		{"[audit]\nretention_interval = \"-1s\"\n", "audit.retention_interval: -1s must not be negative"},
		{"[audit.retention]\nmax_age = \"-1h\"\n", "audit.retention.max_age: -1h0m0s must not be negative"},
		{"[audit.retention]\nbatch = -1\n", "audit.retention.batch: -1 must not be negative"},
		{"[tools]\ndefault_timeout = \"-1s\"\n", "tools.default_timeout: -1s must not be negative"},
		{"[loop]\nchat_timeout = \"-1s\"\n", "loop.chat_timeout: -1s must not be negative"},
		{"[loop]\nheartbeat_timeout = \"-1s\"\n", "loop.heartbeat_timeout: -1s must not be negative"},
		{"[loop]\nquestion_timeout = \"-1s\"\n", "loop.question_timeout: -1s must not be negative"},
		{"[broker]\nmax_packet_bytes = -1\n", "broker.max_packet_bytes: -1, want 0"},
		{"[audit.cold]\nurl = \"http://127.0.0.1:1\"\nbatch_size = -1\n", "audit.cold.batch_size: -1 must not be negative"},
		{"[audit.cold]\nmax_answer_bytes = -1\n", "audit.cold.max_answer_bytes: -1 must not be negative"},
		{"[audit]\nhot_capacity = 0\nretention_interval = \"0s\"\n[audit.retention]\nevent_max_age = \"-1s\"\n", ""},
	}
	for _, tt := range tests {
		loadConfig(t, t.TempDir(), tt.body, tt.want)
	}
}

// TestChatTimeoutCoversAColdModel: by default a chat outlasts the chain's
// longest load_timeout by DefaultChatAfterLoad, so that a first chat on a
// cold local model gets the load bound its endpoint documents; before,
// the 10 minute chat default cut the 15 minute load default of every
// local endpoint. A chat_timeout set in the file is kept as written.
// TestScriptedNeedsItsTranscript: provider "scripted" written without a
// transcript is refused when the file is read; it ran a node without a
// model, whose chats were refused saying [llm] was not configured.
func TestScriptedNeedsItsTranscript(t *testing.T) {
	loadConfig(t, t.TempDir(), "[llm]\nprovider = \"scripted\"\n", `llm.transcript: required with provider "scripted"`)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.json"), []byte(`{"name":"t","turns":[{"content":"hi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, _ := loadConfig(t, dir, "[llm]\nprovider = \"scripted\"\ntranscript = \"t.json\"\n", ""); c.LLM.Transcript != filepath.Join(dir, "t.json") {
		t.Fatalf("transcript %q", c.LLM.Transcript)
	}
	if c, _ := loadConfig(t, t.TempDir(), "", ""); c.LLM.Provider != llm.ProviderScripted || c.LLM.Transcript != "" {
		t.Fatalf("no [llm]: provider %q transcript %q, want the offline default", c.LLM.Provider, c.LLM.Transcript)
	}
}

// TestShortChatTimeoutWarnsAtStart: a chat_timeout set shorter than the
// chain's longest load_timeout cuts every first chat on a cold model, so the
// node says so when it starts; a default or a longer one says nothing.
func TestShortChatTimeoutWarnsAtStart(t *testing.T) {
	local := "[llm]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n"
	hosted := "[llm]\nprovider = \"openai\"\nbase_url = \"https://api.example.com/v1\"\nmodel = \"m\"\napi_key_env = \"K\"\n"
	for _, tt := range []struct {
		name, body string
		warn       bool
	}{
		{"shorter than the local default", local + "[loop]\nchat_timeout = \"3m\"\n", true},
		{"shorter than a fallback's", hosted + "[[llm.fallback]]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\nload_timeout = \"30m\"\n[loop]\nchat_timeout = \"20m\"\n", true},
		{"the default", local, false},
		{"longer", local + "[loop]\nchat_timeout = \"16m\"\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, _ := loadConfig(t, dir, tt.body, "")
			cfg.DataDir = dir // the default is in the working directory
			cfg.Broker.Listen = "127.0.0.1:0"
			cfg.HTTP.Listen = "off"
			var buf bytes.Buffer
			startNode(t, cfg, Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
			got := strings.Contains(buf.String(), "chat_timeout is shorter than llm.load_timeout")
			if got != tt.warn {
				t.Fatalf("warned %v, want %v; the log:\n%s", got, tt.warn, buf.String())
			}
		})
	}
}

func TestChatTimeoutCoversAColdModel(t *testing.T) {
	local := "[llm]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n"
	hosted := "[llm]\nprovider = \"openai\"\nbase_url = \"https://api.example.com/v1\"\nmodel = \"m\"\napi_key_env = \"K\"\n"
	for _, tt := range []struct {
		name, body string
		want       time.Duration
	}{
		{"scripted", "", DefaultChatTimeout},
		{"hosted", hosted, DefaultChatTimeout},
		{"local", local, llm.DefaultLocalLoadTimeout + DefaultChatAfterLoad},
		{"local, its load bound set", local + "load_timeout = \"40m\"\n", 40*time.Minute + DefaultChatAfterLoad},
		{"hosted with a slow local fallback", hosted + "[[llm.fallback]]\nprovider = \"openai\"\nbase_url = \"http://pi.local:11434/v1\"\nmodel = \"m\"\nload_timeout = \"30m\"\n",
			30*time.Minute + DefaultChatAfterLoad},
		{"set in the file", local + "[loop]\nchat_timeout = \"3m\"\n", 3 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := loadConfig(t, t.TempDir(), tt.body, "")
			if got := c.Loop.ChatTimeout.Duration; got != tt.want {
				t.Fatalf("chat_timeout %s, want %s", got, tt.want)
			}
		})
	}
}

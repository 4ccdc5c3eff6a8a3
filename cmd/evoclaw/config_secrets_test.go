package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noSecret names an environment variable no test sets.
const noSecret = "EVOCLAW_TEST_UNSET_SECRET"

// TestOperatorCommandsNeedNoSecrets: the operator commands read the node's
// evoclaw.toml (or the agent's agent.toml) with --config for its data
// directory, cold tier, users file or skills, without the secrets its
// *_env keys name; serve and edge still refuse to start without them,
// before they write anything. Before, every one of them failed with
// "broker.password_env: environment variable ... is empty" (as a usage
// error), so that `sudo -u evoclaw evoclaw audit sql --config
// /etc/evoclaw/evoclaw.toml` failed on a node whose secrets systemd reads
// from an environment file.
func TestOperatorCommandsNeedNoSecrets(t *testing.T) {
	if os.Getenv(noSecret) != "" {
		t.Fatalf("%s is set", noSecret)
	}
	data := auditDir(t, 3)
	dir := t.TempDir()
	node := filepath.Join(dir, "evoclaw.toml")
	writeFile(t, node, fmt.Sprintf("data_dir = %q\n[broker]\nurl = \"tcp://127.0.0.1:1\"\nusername = \"node\"\npassword_env = %q\n", data, noSecret))
	skillsDir := filepath.Join(dir, "skills")
	if code, _, errOut := runArgs("skills", "install", "demo", skillsDir); code != 0 {
		t.Fatal(errOut)
	}
	agent := filepath.Join(dir, "agent.toml")
	writeFile(t, agent, fmt.Sprintf("agent_id = \"pi1\"\ndata_dir = %q\n[mqtt]\nbroker = \"tcp://127.0.0.1:1\"\nusername = \"pi1\"\npassword_env = %q\n[skills]\ndirs = [%q]\n",
		filepath.Join(dir, "edge-data"), noSecret, skillsDir))
	for _, args := range [][]string{
		{"audit", "status", "--config", node},
		{"audit", "verify", "--config", node},
		{"audit", "sql", "--config", node, "SELECT count(*) FROM tool_calls"},
		{"logs", "--config", node},
		{"metrics", "--tools", "--config", node},
		{"agents", "list", "--config", node},
		{"skills", "list", "--config", agent},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			if code, out, errOut := runArgs(args...); code != 0 || strings.Contains(errOut, noSecret) {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
		})
	}
	for _, tt := range []struct{ cmd, conf, key, data string }{
		{"serve", node, "broker.password_env", filepath.Join(dir, "serve-data")},
		{"edge", agent, "mqtt.password_env", filepath.Join(dir, "edge-data")},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			code, _, errOut := runBinary(t, "", tt.cmd, "--config", tt.conf, "--data-dir", tt.data)
			if code != 1 || !strings.Contains(errOut, tt.key+": environment variable "+noSecret+" is empty") {
				t.Fatalf("exit %d, want 1 naming the missing secret\n%s", code, errOut)
			}
			if _, err := os.Stat(tt.data); !os.IsNotExist(err) {
				t.Errorf("the refused start made its data directory: %v", err)
			}
		})
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

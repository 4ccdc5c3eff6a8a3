package edge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsCheckedAtStart: LoadConfig reads an agent.toml whose
// password_env names an empty variable (skills list --config needs no
// secret); Validate, which New runs, refuses it, naming the variable.
func TestSecretsCheckedAtStart(t *testing.T) {
	const unset = "EVOCLAW_TEST_SURELY_UNSET"
	if os.Getenv(unset) != "" {
		t.Fatalf("%s is set", unset)
	}
	path := filepath.Join(t.TempDir(), "agent.toml")
	body := "agent_id = \"pi1\"\n[mqtt]\nusername = \"pi1\"\npassword_env = \"" + unset + "\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if _, err := New(c, nil); err == nil || !strings.Contains(err.Error(), "mqtt.password_env: environment variable "+unset+" is empty") {
		t.Fatalf("New = %v, want the empty variable named", err)
	}
	t.Setenv(unset, "secret")
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate with the secret set: %v", err)
	}
}

// TestMissingAgentIDSaysWhatToSet: the packaged agent.toml, which leaves
// agent_id to the operator, is refused with what to set. Before, the error
// was "agent_id: agent id is empty".
func TestMissingAgentIDSaysWhatToSet(t *testing.T) {
	_, err := LoadConfig(filepath.Join("..", "cmd", "release", "packaging", "agent.toml"))
	if err == nil || !strings.Contains(err.Error(), "set agent_id to this agent's name") || !strings.Contains(err.Error(), "evoclaw agents add") {
		t.Fatalf("LoadConfig of the packaged agent.toml = %v, want what to set", err)
	}
}

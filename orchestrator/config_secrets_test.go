package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsCheckedAtStart: LoadConfig reads a file whose *_env keys name
// empty variables (an operator command reads the node's file without its
// secrets); Validate, which Start runs, refuses it, naming the variable.
func TestSecretsCheckedAtStart(t *testing.T) {
	const unset = "EVOCLAW_TEST_SURELY_UNSET"
	if os.Getenv(unset) != "" {
		t.Fatalf("%s is set", unset)
	}
	path := filepath.Join(t.TempDir(), "evoclaw.toml")
	body := "[broker]\nurl = \"tcp://broker.lan:1883\"\nusername = \"node\"\npassword_env = \"" + unset + "\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "broker.password_env: environment variable "+unset+" is empty") {
		t.Fatalf("Validate = %v, want the empty variable named", err)
	}
	t.Setenv(unset, "secret")
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate with the secret set: %v", err)
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// exampleLine is a commented-out setting in a shipped config: "#key = ..."
// or "#[section]", with no space after the "#" (prose has one).
var exampleLine = regexp.MustCompile(`^#([A-Za-z_\[])`)

// TestShippedConfigs loads /etc/evoclaw/*.toml as shipped, and again with
// every example setting uncommented, so that neither a key nor an example
// can rot: unknown keys are errors.
func TestShippedConfigs(t *testing.T) {
	t.Setenv("EVOCLAW_MQTT_PASSWORD", "example-password")
	for _, uncomment := range []bool{false, true} {
		dir := t.TempDir()
		for _, name := range []string{"evoclaw.toml", "agent.toml"} {
			b, err := os.ReadFile(filepath.Join("packaging", name))
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			if uncomment {
				lines := strings.Split(text, "\n")
				for i, l := range lines {
					if !exampleLine.MatchString(l) {
						continue
					}
					lines[i] = l[1:]
				}
				text = strings.Join(lines, "\n")
				// The uncommented [builtin] needs its workspace and the
				// shipped skills directory is created by the operator.
				if err := os.MkdirAll(filepath.Join(dir, "skills"), 0o755); err != nil {
					t.Fatal(err)
				}
				text = strings.ReplaceAll(text, "/var/lib/evoclaw/edge/", dir+"/")
				text = strings.ReplaceAll(text, "/etc/evoclaw/tls/", dir+"/")
			} else if name == "agent.toml" {
				// As shipped, agent_id is the one thing left to set.
				text = "agent_id = \"test-agent\"\n" + text
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := orchestrator.LoadConfig(filepath.Join(dir, "evoclaw.toml")); err != nil {
			t.Errorf("evoclaw.toml (examples uncommented: %v): %v", uncomment, err)
		}
		if _, err := edge.LoadConfig(filepath.Join(dir, "agent.toml")); err != nil {
			t.Errorf("agent.toml (examples uncommented: %v): %v", uncomment, err)
		}
	}
}

// TestUnits checks what docs/INSTALL.md promises of the shipped units, and
// that systemd-analyze verify (where installed) takes them as they are in
// the tree; .ci/run verifies them again after installing the package.
func TestUnits(t *testing.T) {
	common := []string{"User=evoclaw", "Restart=on-failure", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
		"NoNewPrivileges=yes", "CapabilityBoundingSet=\n", "StateDirectory=evoclaw", "UMask=0077"}
	for unit, want := range map[string][]string{
		"evoclaw.service":      append(common, "ExecStart=/usr/bin/env /usr/bin/evoclaw serve ", "RestrictNamespaces=yes", "SystemCallFilter=@system-service", "PrivateDevices=yes"),
		"evoclaw-edge.service": append(common, "ExecStart=/usr/bin/env /usr/bin/evoclaw edge "),
	} {
		b, err := os.ReadFile(filepath.Join("packaging", unit))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), "\n"+w) {
				t.Errorf("%s lacks %q", unit, strings.TrimSpace(w))
			}
		}
		// Where the package is not installed: the unit's command is one
		// that exists everywhere (env), so the check is of the unit.
		if sa, err := exec.LookPath("systemd-analyze"); err == nil {
			if out, err := exec.Command(sa, "verify", "--man=no", filepath.Join("packaging", unit)).CombinedOutput(); err != nil {
				t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, out)
			}
		} else if os.Getenv("EVOCLAW_REQUIRE_PEERS") == "1" {
			t.Errorf("systemd-analyze is not installed (EVOCLAW_REQUIRE_PEERS=1)")
		} else {
			t.Logf("SKIPPED systemd-analyze verify of %s: systemd-analyze is not installed", unit)
		}
	}
}

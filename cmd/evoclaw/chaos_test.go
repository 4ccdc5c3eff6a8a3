package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/chaos"
)

func TestChaosList(t *testing.T) {
	out, _ := runCLI(t, 0, "chaos", "list")
	for _, s := range chaos.Scenarios() {
		if !strings.Contains(out, s.Name) {
			t.Errorf("chaos list lacks %s:\n%s", s.Name, out)
		}
	}
}

func TestChaosUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"chaos"}, {"chaos", "no-such-scenario"}, {"chaos", "a", "b"}, {"chaos-node"}} {
		_, errOut := runCLI(t, 2, args...)
		if !strings.Contains(errOut, "usage") {
			t.Errorf("evoclaw %v: no usage text:\n%s", args, errOut)
		}
	}
}

// TestChaosCommand runs a scenario as a user would: the binary starts its
// own agent processes, prints what it did and found, and exits 0.
func TestChaosCommand(t *testing.T) {
	cmd := exec.Command(evoclawBinary(t), "chaos", "edge-kill", "--calls", "6", "--data-dir", t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chaos edge-kill: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	for _, want := range []string{"findings of edge-kill:", "0 ran twice", "recovery (kill to first success):", "result: every check passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/chaos"
)

// TestChaosList: chaos list names every scenario, its summary in one
// column. Before, orchestrator-kill (17 letters) ran into its summary.
func TestChaosList(t *testing.T) {
	out, _ := runCLI(t, 0, "chaos", "list")
	column := -1
	for _, s := range chaos.Scenarios() {
		i := strings.Index(out, s.Name)
		if i < 0 {
			t.Errorf("chaos list lacks %s:\n%s", s.Name, out)
			continue
		}
		line := out[i:]
		line, _, _ = strings.Cut(line, "\n")
		col := strings.Index(line, s.Summary)
		if column < 0 {
			column = col
		}
		if col <= len(s.Name) || col != column {
			t.Errorf("the summary of %s starts at column %d, want %d, after its name:\n%s", s.Name, col, column, out)
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

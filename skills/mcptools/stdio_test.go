//go:build linux

package mcptools

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/evoclaw/evoclaw/skills/internal/proctest"
)

// TestStdioServerStopsWithItsGroup: a server that ignores the end of its
// input and SIGTERM, and leaves a process running after a call, is gone
// with everything it started once its session is closed. Before, the
// process it started outlived the agent's shutdown.
func TestStdioServerStopsWithItsGroup(t *testing.T) {
	const sleep = "1000.4241"
	set, errs := connectHostile(t, "fork", sleep)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tools, _ := set.Tools()
	if out := tools[0].Run(context.Background(), nil); out.ErrorType() != "" {
		t.Fatalf("call: %+v", out)
	}
	if err := set.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	proctest.WaitGone(t, hostileBin, "fork", sleep)
	proctest.WaitGone(t, "sleep", sleep)
}

// TestStdioServerDiesWithTheAgent: an agent killed with SIGKILL cannot
// close its servers; a server that ignores the end of its input must die
// with it all the same. Before, it ran on.
func TestStdioServerDiesWithTheAgent(t *testing.T) {
	const sleep = "1000.4243"
	agent, line := proctest.StartSelf(t, agentEnv+"="+strings.Join([]string{hostileBin, "fork", sleep}, " "))
	if line != "connected" {
		t.Fatalf("agent said %q", line)
	}
	agent.Process.Signal(syscall.SIGKILL)
	agent.Wait()
	proctest.WaitGone(t, hostileBin, "fork", sleep)
}

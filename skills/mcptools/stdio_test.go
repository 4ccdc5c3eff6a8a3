//go:build linux

package mcptools

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestStdioServerThatReadsNothing: a server that floods the agent with
// requests and never reads the answers is stopped with ErrStalled, instead
// of growing the agent while a write of an answer waits forever. Before,
// Connect never returned (the write ignores every deadline) and evoclaw
// serve grew to 6.5 GB in a minute without becoming ready.
func TestStdioServerThatReadsNothing(t *testing.T) {
	done := make(chan []error, 1)
	go func() {
		_, errs := Connect(context.Background(), map[string]ServerConfig{"h": {Command: hostileBin, Args: []string{"flood"}}}, nil)
		done <- errs
	}()
	select {
	case errs := <-done:
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), ErrStalled.Error()) {
			t.Fatalf("connect errors %v, want %v", errs, ErrStalled)
		}
	case <-time.After(time.Minute): // a hang guard, far past DefaultWriteStall
		t.Fatal("Connect did not return")
	}
}

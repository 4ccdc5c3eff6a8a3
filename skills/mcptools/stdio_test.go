//go:build linux

package mcptools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// TestServerLeftoversDieAtNextStart: what a stdio server started, in its
// process group, outlives an agent killed with SIGKILL (the parent-death
// signal reaches the server alone), and is killed when the agent starts
// again, before it starts its servers; the group file is then empty.
// Before, the agent's next start left it running and started a second.
func TestServerLeftoversDieAtNextStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sleep  string
		server func(dir, sleep string) []string
		runs   []string // the server's command line once it runs
	}{
		{"a child the server started", "1000.4245", func(_, sleep string) []string { return []string{hostileBin, "spawn", sleep} },
			[]string{hostileBin, "spawn", "1000.4245"}},
		{"a job of the server's shell", "1000.4246", func(dir, sleep string) []string {
			script := filepath.Join(dir, "server.sh")
			body := fmt.Sprintf("#!/bin/sh\nsleep %s &\nexec %s tools 1 1\n", sleep, hostileBin)
			if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
				t.Fatal(err)
			}
			return []string{script}
		}, []string{hostileBin, "tools", "1", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			groups := filepath.Join(dir, "groups")
			server := tc.server(dir, tc.sleep)
			agent, line := proctest.StartSelf(t, agentEnv+"="+strings.Join(server, " "), groupsEnv+"="+groups)
			if line != "connected" {
				t.Fatalf("agent said %q", line)
			}
			agent.Process.Signal(syscall.SIGKILL)
			agent.Wait()
			proctest.WaitGone(t, tc.runs...)
			if !proctest.Running("sleep", tc.sleep) {
				t.Fatal("the server's child died with the agent: nothing left to test")
			}
			set, errs := ConnectWith(context.Background(), nil, Options{GroupFile: groups})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			t.Cleanup(func() { set.Close() })
			proctest.WaitGone(t, "sleep", tc.sleep)
			if b, err := os.ReadFile(groups); err != nil || len(b) > 0 {
				t.Errorf("group file %q (%v), want it empty", b, err)
			}
		})
	}
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

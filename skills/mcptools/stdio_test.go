//go:build linux

package mcptools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
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

// TestServerLeftoversDieWithTheAgent: what a stdio server started, in its
// process group, dies within moments of an agent killed with SIGKILL (the
// parent-death signal reaches the server alone; the group's keeper kills
// the rest). When the keeper is gone too, the agent's next start kills
// it, before it starts its servers, and empties the group file. Before,
// it ran on (reparented), and the next start started a second.
func TestServerLeftoversDieWithTheAgent(t *testing.T) {
	servers := []struct {
		name   string
		server func(dir, sleep string) []string
		runs   func(sleep string) []string // the server's command line once it runs
	}{
		{"a child the server started",
			func(_, sleep string) []string { return []string{hostileBin, "spawn", sleep} },
			func(sleep string) []string { return []string{hostileBin, "spawn", sleep} }},
		{"a job of the server's shell", func(dir, sleep string) []string {
			script := filepath.Join(dir, "server.sh")
			body := fmt.Sprintf("#!/bin/sh\nsleep %s &\nexec %s tools 1 1\n", sleep, hostileBin)
			if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
				t.Fatal(err)
			}
			return []string{script}
		}, func(string) []string { return []string{hostileBin, "tools", "1", "1"} }},
	}
	for i, srv := range servers {
		for _, keeperKilled := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, keeper killed %v", srv.name, keeperKilled), func(t *testing.T) {
				sleep := fmt.Sprintf("1000.42%d%d", 5+i, len(fmt.Sprint(keeperKilled)))
				dir := t.TempDir()
				groups := filepath.Join(dir, "groups")
				agent, line := proctest.StartSelf(t, agentEnv+"="+strings.Join(srv.server(dir, sleep), " "), groupsEnv+"="+groups)
				if line != "connected" {
					t.Fatalf("agent said %q", line)
				}
				if keeperKilled {
					k := keeperOf(t, agent.Process.Pid)
					syscall.Kill(k, syscall.SIGKILL)
					testenv.Eventually(t, proctest.Within, func() bool { return syscall.Kill(k, 0) != nil }, "the keeper to be reaped")
				}
				agent.Process.Signal(syscall.SIGKILL)
				agent.Wait()
				proctest.WaitGone(t, srv.runs(sleep)...)
				if !keeperKilled {
					proctest.WaitGone(t, "sleep", sleep)
					return
				}
				if !proctest.Running("sleep", sleep) {
					t.Fatal("the server's child died with the agent without its keeper: nothing left to test")
				}
				set, errs := ConnectWith(context.Background(), nil, Options{GroupFile: groups})
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				t.Cleanup(func() { set.Close() })
				proctest.WaitGone(t, "sleep", sleep)
				if b, err := os.ReadFile(groups); err != nil || len(b) > 0 {
					t.Errorf("group file %q (%v), want it empty", b, err)
				}
			})
		}
	}
}

// keeperOf returns the pid of the keeper the agent agentPid started,
// failing the test when there is not exactly one.
func keeperOf(t *testing.T, agentPid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		stat, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err1 != nil || err2 != nil || !strings.Contains(string(cmdline), keeperName) {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(agentPid) {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		t.Fatalf("keepers of agent %d: %v, want one", agentPid, found)
	}
	return found[0]
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

//go:build linux

package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/skills/internal/proctest"
)

// agentEnv makes the test binary act as an agent: it runs one tool with
// Run, prints the tool's pid and waits to be killed.
const agentEnv = "EVOCLAW_PROC_TEST_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(agentEnv) == "1" {
		actAsAgent()
		return
	}
	if os.Getenv(limitsEnv) == "1" {
		os.Exit(limitsChild())
	}
	os.Exit(m.Run())
}

// actAsAgent runs "sh -c 'echo $$; exec sleep 100'" and blocks.
func actAsAgent() {
	ctx := WithOnStart(context.Background(), func(pid int) { fmt.Println(pid) })
	Run(ctx, sh("exec sleep 100", time.Minute))
	os.Exit(1) // the test kills this process before the tool ends
}

// TestToolDiesWithItsAgent: a process that ran a tool through Run is
// killed with SIGKILL, which it cannot catch; its tool must die too.
func TestToolDiesWithItsAgent(t *testing.T) {
	agent, line := proctest.StartSelf(t, agentEnv+"=1")
	tool, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(tool, syscall.SIGKILL) })
	if gone(tool) {
		t.Fatalf("tool %d not running before the kill", tool)
	}
	agent.Process.Kill()
	agent.Wait()
	testenv.Eventually(t, 5*time.Second, func() bool { return gone(tool) }, "the tool to die with its agent")
}

// TestToolOutlivesTheThreadThatStartedIt: the parent-death signal fires
// when the thread that forked the child ends. A child is started here from
// a goroutine locked to its thread, which then returns, so the runtime
// ends that thread; the child must go on.
func TestToolOutlivesTheThreadThatStartedIt(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // returning while locked makes the runtime end this thread
		started <- StartTied(cmd)
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Give the runtime time to end the thread, then the child must still run.
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if gone(cmd.Process.Pid) {
			t.Fatalf("the child died when the thread that asked for it ended")
		}
		time.Sleep(20 * time.Millisecond) // watching for a death that must not happen
	}
}

// TestKillLeftovers: what a tool left in its group is killed; a group id
// that now names something else, or one of another boot, is left alone.
func TestKillLeftovers(t *testing.T) {
	// A shell that leaves a sleep in its group and exits, the way a tool
	// cut by its agent's death leaves its background jobs.
	cmd := exec.Command("/bin/sh", "-c", "sleep 100 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var g Group
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if g, err = GroupOf(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outPipe).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	leftover, _ := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() { syscall.Kill(-g.Pgid, syscall.SIGKILL) })

	// The leftover may start a clock tick after the shell: a recorded start
	// after the leftover's own is the one that must look reused.
	st, err := readStat(leftover)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		g    Group
		want error
	}{
		{"a member older than the recorded start (id reused)", Group{Pgid: g.Pgid, StartTicks: st.start + 1, BootID: g.BootID}, ErrGroupReused},
		{"members older than the leader", Group{Pgid: g.Pgid, StartTicks: g.StartTicks + 1_000_000, BootID: g.BootID}, ErrGroupReused},
		{"another boot", Group{Pgid: g.Pgid, StartTicks: g.StartTicks, BootID: "another"}, nil},
		{"the agent's own group", Group{Pgid: syscall.Getpgrp(), StartTicks: 0, BootID: g.BootID}, ErrGroupReused},
	} {
		n, err := tt.g.KillLeftovers()
		if !errors.Is(err, tt.want) || n != 0 {
			t.Errorf("%s: killed %d, err %v; want 0, %v", tt.name, n, err, tt.want)
		}
	}
	if gone(leftover) {
		t.Fatal("a refused kill killed the leftover")
	}
	if n, err := g.KillLeftovers(); n != 1 || err != nil {
		t.Fatalf("KillLeftovers = %d, %v; want 1, nil", n, err)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return gone(leftover) }, "the leftover to die")
	if n, err := g.KillLeftovers(); n != 0 || err != nil {
		t.Fatalf("KillLeftovers of an empty group = %d, %v; want 0, nil", n, err)
	}
}

// Package proctest checks from tests that processes are gone, by their
// command line, across process groups and pid namespaces.
package proctest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// Within is how long WaitGone polls.
const Within = 10 * time.Second

// WaitGone polls /proc until no live process (zombies do not count) has
// exactly the command line args, failing the test after Within. Use
// arguments no other process on the machine has ("sleep 61.4242").
func WaitGone(t testing.TB, args ...string) {
	t.Helper()
	want := strings.Join(args, "\x00") + "\x00"
	testenv.Eventually(t, Within, func() bool { return !running(want) }, "process "+strconv.Quote(strings.Join(args, " "))+" to end")
}

// Running reports whether a live process (not a zombie) has exactly the
// command line args.
func Running(args ...string) bool {
	return running(strings.Join(args, "\x00") + "\x00")
}

// running reports whether a live process has the raw command line want.
func running(want string) bool {
	return len(pids(want)) > 0
}

// PIDs returns the live processes (not zombies) with exactly the command
// line args: those of one start, for WaitPIDsGone when the same command
// may be started again.
func PIDs(args ...string) []int {
	return pids(strings.Join(args, "\x00") + "\x00")
}

// pids returns the live processes with the raw command line want.
func pids(want string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !live(pid) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && string(b) == want {
			out = append(out, pid)
		}
	}
	return out
}

// live reports whether process pid exists and is no zombie.
func live(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// WaitPIDsGone polls /proc until none of the processes pids is alive,
// failing the test after Within.
func WaitPIDsGone(t testing.TB, pids ...int) {
	t.Helper()
	testenv.Eventually(t, Within, func() bool {
		for _, pid := range pids {
			if live(pid) {
				return false
			}
		}
		return true
	}, fmt.Sprintf("processes %v to end", pids))
}

// StartSelf runs the test binary again, running no test, with env
// ("KEY=value") added to its environment: a stand-in for an agent that a
// test can kill. It returns the process, killed at the end of the test,
// and the first line it printed, without the newline.
func StartSelf(t testing.TB, env ...string) (*exec.Cmd, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd, StartLine(t, cmd)
}

// StartLine starts cmd, killed at the end of the test, and returns the
// first line it printed on its standard output, without the newline.
func StartLine(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s printed no line: %v", cmd.Path, err)
	}
	return strings.TrimSuffix(line, "\n")
}

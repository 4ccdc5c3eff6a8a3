// Package proctest checks from tests that processes are gone, by their
// command line, across process groups and pid namespaces.
package proctest

import (
	"bufio"
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
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(b) != want {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && !strings.Contains(string(stat), ") Z ") {
			return true
		}
	}
	return false
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

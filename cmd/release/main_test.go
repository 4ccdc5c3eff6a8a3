package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// envRunMain makes the test binary run main with the arguments after
// "--", so that a test sees the exit status of a real process.
const envRunMain = "RELEASE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"release"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		return
	}
	os.Exit(m.Run())
}

// TestHelpExitsZero: -h and --help print the usage and exit 0, as the
// evoclaw commands do; a wrong command line exits 2 with the usage. Before,
// each exited 1. None of them builds anything.
func TestHelpExitsZero(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"-h"}, 0, "-targets"},
		{[]string{"--help"}, 0, "-no-deb"},
		{[]string{"--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"--out", "x", "extra"}, 2, `unexpected arguments ["extra"]`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, tt.args...)...)
			cmd.Env = append(os.Environ(), envRunMain+"=1")
			cmd.Dir = t.TempDir() // not a repository: a release that started would fail
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); cmd.ProcessState == nil {
				t.Fatal(err) // it did not start
			}
			if code := cmd.ProcessState.ExitCode(); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, want %d and %q in:\n%s", code, tt.code, tt.want, stderr.String())
			}
		})
	}
}

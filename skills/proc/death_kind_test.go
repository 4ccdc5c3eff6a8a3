package proc

import "testing"

// TestChildDeath: how a bounded child that gave no answer ended, from
// what Run saw of it.
func TestChildDeath(t *testing.T) {
	for _, tt := range []struct {
		name  string
		res   Result
		death Death
		how   string
	}{
		{"go runtime out of memory", Result{ExitCode: 2, Stderr: []byte("fatal error: runtime: out of memory\n")}, DiedOfMemory, "exit status 2: fatal error: runtime: out of memory"},
		{"sqlite", Result{ExitCode: 1, Stderr: []byte("  cannot allocate memory\nmore")}, DiedOfMemory, "exit status 1: cannot allocate memory"},
		{"no thread", Result{ExitCode: 2, Stderr: []byte("runtime/cgo: pthread_create failed: Resource temporarily unavailable")}, DiedOfMemory, "exit status 2: runtime/cgo: pthread_create failed: Resource temporarily unavailable"},
		{"killed by the kernel", Result{ExitCode: -1, Signal: "SIGKILL"}, DiedKilled, "killed by SIGKILL"},
		{"killed at its timeout", Result{ExitCode: -1, Signal: "SIGKILL", TimedOut: true}, DiedOther, "killed by SIGKILL"},
		{"crashed", Result{ExitCode: -1, Signal: "SIGSEGV", Stderr: []byte("segfault at 0\n")}, DiedOther, "killed by SIGSEGV: segfault at 0"},
		{"exited silent", Result{ExitCode: 0}, DiedOther, "exit status 0"},
	} {
		death, how := ChildDeath(&tt.res)
		if death != tt.death || how != tt.how {
			t.Errorf("%s: %v %q, want %v %q", tt.name, death, how, tt.death, tt.how)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// EVOCLAW_CPUPROFILE makes a command write a CPU profile of its run, named
// after the command and the process.
func TestCPUProfileEnv(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "p")
	t.Setenv(profileEnv, prefix)
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("version exited %d: %s", code, errb.String())
	}
	matches, err := filepath.Glob(prefix + ".version.*.prof")
	if err != nil || len(matches) != 1 {
		t.Fatalf("profiles %v (%v), want one", matches, err)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is a gzipped protocol buffer.
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("%s (%d bytes) is not a gzipped profile", matches[0], len(b))
	}
}

// An unwritable prefix is reported and the command still runs.
func TestCPUProfileEnvUnwritable(t *testing.T) {
	t.Setenv(profileEnv, filepath.Join(t.TempDir(), "missing", "p"))
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 || out.Len() == 0 {
		t.Fatalf("version exited %d with %q", code, out.String())
	}
	if !bytes.Contains(errb.Bytes(), []byte("cpu profile")) {
		t.Fatalf("stderr %q does not report the profile that could not be written", errb.String())
	}
}

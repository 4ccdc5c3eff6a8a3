package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Each profiling variable makes a command write its file, named after the
// command and the process, in its format.
func TestProfileEnvs(t *testing.T) {
	gzipped := func(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b } // a pprof profile
	for _, tc := range []struct {
		env, ext string
		valid    func([]byte) bool
	}{
		{profileEnv, "prof", gzipped},
		{memProfileEnv, "heap", gzipped},
		{traceEnv, "trace", func(b []byte) bool { return bytes.HasPrefix(b, []byte("go 1.")) }},
	} {
		t.Run(tc.env, func(t *testing.T) {
			prefix := filepath.Join(t.TempDir(), "p")
			t.Setenv(tc.env, prefix)
			var out, errb bytes.Buffer
			if code := run([]string{"version"}, &out, &errb); code != 0 {
				t.Fatalf("version exited %d: %s", code, errb.String())
			}
			matches, err := filepath.Glob(prefix + ".version.*." + tc.ext)
			if err != nil || len(matches) != 1 {
				t.Fatalf("files %v (%v), want one", matches, err)
			}
			b, err := os.ReadFile(matches[0])
			if err != nil {
				t.Fatal(err)
			}
			if !tc.valid(b) {
				t.Fatalf("%s (%d bytes) is not a %s file", matches[0], len(b), tc.ext)
			}
		})
	}
}

// An unwritable prefix is reported and the command still runs.
func TestProfileEnvUnwritable(t *testing.T) {
	for env, what := range map[string]string{profileEnv: "cpu profile", traceEnv: "execution trace", memProfileEnv: "heap profile"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, filepath.Join(t.TempDir(), "missing", "p"))
			var out, errb bytes.Buffer
			if code := run([]string{"version"}, &out, &errb); code != 0 || out.Len() == 0 {
				t.Fatalf("version exited %d with %q", code, out.String())
			}
			if !bytes.Contains(errb.Bytes(), []byte(what)) {
				t.Fatalf("stderr %q does not report the %s that could not be written", errb.String(), what)
			}
		})
	}
}

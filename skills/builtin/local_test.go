package builtin_test

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/builtin"
	"github.com/evoclaw/evoclaw/skills/internal/opstest"
	"github.com/evoclaw/evoclaw/skills/internal/proctest"
	"github.com/evoclaw/evoclaw/skills/proc"
)

func TestLocalContract(t *testing.T) {
	opstest.Run(t, func(t *testing.T) builtin.Options {
		return builtin.Options{Dir: t.TempDir()}
	})
}

// TestBashGigabyte pushes 1 GB through the bash tool's stdout: the tool
// must keep only its cap, count the rest, and not hold the gigabyte.
func TestBashGigabyte(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1 GB through a pipe")
	}
	const total = 1_000_000_000
	tool, err := builtin.NewBash(builtin.Options{Dir: t.TempDir(), MaxOutput: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := tool.Run(context.Background(), map[string]any{"command": "head -c 1000000000 /dev/zero"})
	runtime.ReadMemStats(&after)
	if out.ErrorType() != "" || out.ResultBytes != total || !out.Truncated {
		t.Fatalf("1 GB run: error %q, ResultBytes %d, Truncated %v", out.ErrorType(), out.ResultBytes, out.Truncated)
	}
	if n := len(out.Text()); n > 4096+100 {
		t.Fatalf("kept %d bytes of output, cap 4096", n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Fatalf("allocated %d MiB while discarding 1 GB of output", alloc>>20)
	}
}

// TestBashTimeoutKillsGroup checks that a timed-out command's background
// jobs die with it.
func TestBashTimeoutKillsGroup(t *testing.T) {
	tool, err := builtin.NewBash(builtin.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out := tool.Run(context.Background(), map[string]any{"command": "sleep 63.4242 & sleep 63.4243", "timeout_ms": int64(300)})
	if out.ErrorType() != wire.ErrTimeout || out.ExitCode == nil || *out.ExitCode != -1 {
		t.Fatalf("bash timeout = %+v", out)
	}
	proctest.WaitGone(t, "sleep", "63.4242")
	proctest.WaitGone(t, "sleep", "63.4243")
}

// TestBashStreams checks that the bash tool passes its output to the
// OutputFunc of its context while keeping its result unchanged.
func TestBashStreams(t *testing.T) {
	tool, err := builtin.NewBash(builtin.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen strings.Builder
	ctx := skills.WithOutput(context.Background(), func(s proc.Stream, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		seen.WriteString(string(s) + ":" + string(p))
	})
	out := tool.Run(ctx, map[string]any{"command": "echo hello; sleep 0.1; echo world"})
	if out.ErrorType() != "" || out.Text() != "hello\nworld\n" {
		t.Fatalf("bash output %q error %q", out.Text(), out.ErrorType())
	}
	mu.Lock()
	defer mu.Unlock()
	if got := seen.String(); got != "stdout:hello\nstdout:world\n" {
		t.Fatalf("streamed %q", got)
	}
}

// TestLongFileNames: apply_patch changes, renames and deletes files whose
// names are as long as the file system allows (255 bytes). Before, its
// temporary and backup files beside them took the name plus a 26-byte
// prefix, and a change of a name over 229 bytes failed with "file name
// too long". (write and edit: the backends' contract, opstest.)
func TestLongFileNames(t *testing.T) {
	for _, tc := range []struct{ name, long, other string }{
		{"ASCII", strings.Repeat("a", 255), strings.Repeat("b", 255)},
		{"two-byte runes", strings.Repeat("é", 127), strings.Repeat("ü", 127)},
		{"in a subdirectory", "sub/" + strings.Repeat("c", 251) + ".txt", "sub/" + strings.Repeat("d", 251) + ".txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, filepath.FromSlash(tc.long)), []byte("three\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ts := fileTools(t, builtin.Options{Dir: ws})
			for i, s := range []struct {
				patch string
				want  map[string]string // the workspace's files after the step
			}{
				{"--- a/" + tc.long + "\n+++ b/" + tc.long + "\n@@ -1 +1 @@\n-three\n+four\n", map[string]string{tc.long: "four\n"}},
				{"diff --git a/" + tc.long + " b/" + tc.other + "\nsimilarity index 100%\nrename from " + tc.long + "\nrename to " + tc.other + "\n",
					map[string]string{tc.other: "four\n"}},
				{"diff --git a/" + tc.other + " b/" + tc.other + "\ndeleted file mode 100644\n--- a/" + tc.other + "\n+++ /dev/null\n@@ -1 +0,0 @@\n-four\n",
					map[string]string{}},
			} {
				if out := ts.Call(context.Background(), "apply_patch", map[string]any{"patch": s.patch}); out.ErrorType() != "" {
					t.Fatalf("step %d: %s: %s", i+1, out.ErrorType(), out.ErrorText())
				}
				if got := filesUnder(t, ws); !maps.Equal(got, s.want) {
					t.Fatalf("step %d: workspace holds %q, want %q", i+1, got, s.want)
				}
			}
		})
	}
}

// fileTools returns a toolset of every tool of the "all" group made with o.
func fileTools(t *testing.T, o builtin.Options) *skills.Toolset {
	t.Helper()
	tools, err := builtin.Group(builtin.GroupAll, o)
	if err != nil {
		t.Fatal(err)
	}
	return opstest.Toolset(t, tools...)
}

// filesUnder returns the regular files under dir, by slash-separated
// relative name, with their content.
func filesUnder(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

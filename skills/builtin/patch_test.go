package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

const patchTwoFiles = `diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
diff --git a/sub/b.txt b/sub/b.txt
--- a/sub/b.txt
+++ b/sub/b.txt
@@ -1,2 +1,2 @@
-alpha
+ALPHA
 beta
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+fresh
+file
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
`

func patchWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for name, body := range map[string]string{"a.txt": "one\ntwo\nthree\n", "sub/b.txt": "alpha\nbeta\n", "gone.txt": "bye\n"} {
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// snapshot reads every file under dir, hidden temporaries included.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			m[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return m
}

func patchTool(t *testing.T, o Options) skills.GoTool {
	t.Helper()
	tool, err := NewApplyPatch(o)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestApplyPatch(t *testing.T) {
	ws := patchWorkspace(t)
	tool := patchTool(t, Options{Dir: ws})
	if p := tool.Tool.Permissions; len(p) != 1 || p[0] != skills.PermFileWrite {
		t.Fatalf("permissions %v", p)
	}
	out := tool.Run(context.Background(), map[string]any{"patch": patchTwoFiles})
	if out.ErrorType() != "" {
		t.Fatalf("apply = %+v", out)
	}
	want := map[string]string{"a.txt": "one\nTWO\nthree\n", "sub/b.txt": "ALPHA\nbeta\n", "new.txt": "fresh\nfile\n"}
	if got := snapshot(t, ws); !equalMaps(got, want) {
		t.Fatalf("after patch %v, want %v", got, want)
	}
	if !strings.Contains(out.Text(), "created new.txt") || !strings.Contains(out.Text(), "deleted gone.txt") {
		t.Errorf("summary %q", out.Text())
	}

	// A traditional diff with a/ b/ prefixes and a rename in git form.
	out = tool.Run(context.Background(), map[string]any{"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n"})
	if out.ErrorType() != "" || snapshot(t, ws)["a.txt"] != "ONE\nTWO\nthree\n" {
		t.Fatalf("traditional diff = %+v", out)
	}
	out = tool.Run(context.Background(), map[string]any{"patch": "diff --git a/new.txt b/moved.txt\nsimilarity index 100%\nrename from new.txt\nrename to moved.txt\n"})
	if got := snapshot(t, ws); out.ErrorType() != "" || got["moved.txt"] != "fresh\nfile\n" || got["new.txt"] != "" {
		t.Fatalf("rename = %+v, files %v", out, got)
	}
}

// TestApplyPatchHoldsBounded: the files one patch reads and the contents
// it makes come to at most patchHeld times the file limit; past it the
// patch is refused and nothing changes. Before, a patch of a few
// kilobytes that copied one 4 MiB file 99 times held 486 MiB (here, with a
// 64 KiB limit, 12 MiB).
func TestApplyPatchHoldsBounded(t *testing.T) {
	const limit = 64 << 10
	file := func(first string, size int) string { return first + "\n" + strings.Repeat("y", size-3) + "\n" }
	change := func(name string) string { return "--- a/" + name + "\n+++ b/" + name + "\n@@ -1 +1 @@\n-x\n+X\n" }
	var copies, fiveChanges strings.Builder
	for i := range 99 {
		fmt.Fprintf(&copies, "diff --git a/f0 b/copy%d\nsimilarity index 100%%\ncopy from f0\ncopy to copy%d\n", i, i)
	}
	for i := range 5 {
		fiveChanges.WriteString(change(fmt.Sprintf("f%d", i)))
	}
	for _, tc := range []struct {
		name, patch string
		size        int // of each of the files f0..f4 before
		changed     int // how many of them the patch changes; 0: it is refused
	}{
		{"99 copies of a file at the limit", copies.String(), limit, 0},
		{"five files at the limit changed", fiveChanges.String(), limit, 0},
		{"two files at the limit changed", change("f0") + change("f1"), limit, 2},
		{"five smaller files changed", fiveChanges.String(), limit / 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			for i := range 5 {
				if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d", i)), []byte(file("x", tc.size)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := snapshot(t, ws)
			for i := range tc.changed {
				want[fmt.Sprintf("f%d", i)] = file("X", tc.size)
			}
			tool := patchTool(t, Options{Dir: ws, MaxEditBytes: limit})
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			out := tool.Run(context.Background(), map[string]any{"patch": tc.patch})
			runtime.ReadMemStats(&m1)
			if got := snapshot(t, ws); !equalMaps(got, want) {
				t.Fatalf("%s %q; the files are not as expected", out.ErrorType(), out.ErrorText())
			}
			if tc.changed > 0 {
				if out.ErrorType() != "" {
					t.Fatalf("%s %q", out.ErrorType(), out.ErrorText())
				}
				return
			}
			if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "Split it into smaller patches") {
				t.Fatalf("%s %q, want a refusal", out.ErrorType(), out.ErrorText())
			}
			// Four times what it may hold, for the race detector's share:
			// the 99 copies took twelve times as much before.
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 16*patchHeld*limit {
				t.Errorf("allocated %d KiB, want at most %d KiB", alloc>>10, 16*patchHeld*limit>>10)
			}
		})
	}
}

// TestApplyPatchAllOrNothing: a hunk that does not apply, a path out of
// the workspace, or a failure halfway through committing leaves every
// file as it was, with no temporaries or backups left behind.
func TestApplyPatchAllOrNothing(t *testing.T) {
	badHunk := strings.Replace(patchTwoFiles, "-alpha", "-ALPHA-NOT-THERE", 1)
	for _, tc := range []struct {
		name  string
		patch string
		fault func(int) error
		want  wire.ErrorType
	}{
		{"hunk does not apply", badHunk, nil, wire.ErrExecutionFailed},
		{"outside", patchTwoFiles + "diff --git a/../escape.txt b/../escape.txt\nnew file mode 100644\n--- /dev/null\n+++ b/../escape.txt\n@@ -0,0 +1 @@\n+x\n", nil, wire.ErrPermissionDenied},
		{"outside, traditional", "--- /dev/null\n+++ ../escape.txt\n@@ -0,0 +1 @@\n+x\n", nil, wire.ErrPermissionDenied},
		{"absolute outside", "--- /etc/hostname\n+++ /etc/hostname\n@@ -1 +1 @@\n-a\n+b\n", nil, wire.ErrPermissionDenied},
		{"not a diff", "just words", nil, wire.ErrInvalidParams},
		{"creates existing", "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n", nil, wire.ErrExecutionFailed},
		{"disk full at the third file", patchTwoFiles, func(i int) error {
			if i == 2 {
				return syscall.ENOSPC
			}
			return nil
		}, wire.ErrExecutionFailed},
		{"fails at the last step", patchTwoFiles, func(i int) error {
			if i == 3 {
				return errors.New("injected")
			}
			return nil
		}, wire.ErrExecutionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := patchWorkspace(t)
			before := snapshot(t, ws)
			tool := patchTool(t, Options{Dir: ws, Files: Local{Dir: ws, commitFault: tc.fault}})
			out := tool.Run(context.Background(), map[string]any{"patch": tc.patch})
			if out.ErrorType() != tc.want {
				t.Fatalf("error type %q (%s), want %q", out.ErrorType(), out.ErrorText(), tc.want)
			}
			if after := snapshot(t, ws); !equalMaps(before, after) {
				t.Fatalf("files changed by a failed patch:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// TestApplyPatchSymlinkTarget: a file reached through a symlink is not
// replaced (the link could be swapped to lead out).
func TestApplyPatchSymlinkTarget(t *testing.T) {
	ws := patchWorkspace(t)
	if err := os.Symlink("a.txt", filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	out := patchTool(t, Options{Dir: ws}).Run(context.Background(), map[string]any{"patch": "--- a/link.txt\n+++ b/link.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"})
	if out.ErrorType() != wire.ErrInvalidParams {
		t.Fatalf("patch through a symlink = %+v", out)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// FuzzApplyPatch feeds arbitrary text to apply_patch on a small
// workspace: it must never panic, never touch anything outside the
// workspace, and a failure must leave the workspace as it was.
func FuzzApplyPatch(f *testing.F) {
	f.Add(patchTwoFiles)
	f.Add("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n")
	f.Add("--- /dev/null\n+++ b/../x\n@@ -0,0 +1 @@\n+x\n")
	f.Add("diff --git a/a.txt b/c.txt\nrename from a.txt\nrename to c.txt\n")
	f.Add("@@ -1 +1 @@\n-a\n+b\n")
	parent := f.TempDir()
	f.Fuzz(func(t *testing.T, patch string) {
		ws, err := os.MkdirTemp(parent, "ws")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(ws)
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644)
		before := snapshot(t, ws)
		tool, err := NewApplyPatch(Options{Dir: ws, FileTimeout: 0})
		if err != nil {
			t.Fatal(err)
		}
		out := tool.Run(context.Background(), map[string]any{"patch": patch})
		if !out.Succeeded() && !equalMaps(before, snapshot(t, ws)) {
			t.Fatalf("failed patch %q changed the workspace: %s", patch, out.ErrorText())
		}
		for name := range snapshot(t, ws) {
			if strings.Contains(name, ".evoclaw-") {
				t.Fatalf("left %s behind", name)
			}
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 1 {
			t.Fatalf("patch %q wrote outside the workspace: %v", patch, entries)
		}
	})
}

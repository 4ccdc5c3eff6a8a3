//go:build linux

package gittools_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5"
	"golang.org/x/sys/unix"

	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/internal/gittools"
)

const secret = "SECRET-OUTSIDE"

// raceBudget bounds each race test of the tools; they run in parallel.
// Over go-billy's BoundOS (securejoin, then open by name) they caught the
// leak in some runs only (more on an idle machine than on a loaded one):
// TestRepoFilesystemRace is the reliable catch, these the end-to-end one.
const raceBudget = 1500 * time.Millisecond

// fsRaceBudget bounds each case of TestRepoFilesystemRace. Over BoundOS,
// in 6 runs with -race on a loaded machine, its read case failed in all
// (within 751 tries) and its write case in 5 (at the first check).
const fsRaceBudget = 500 * time.Millisecond

// exchange swaps a and b (one a directory, the other a symlink) with
// renameat2(RENAME_EXCHANGE) and back, again and again until the returned
// stop is called, as a model with bash in the workspace can. A random
// pause below maxPause after each pair keeps a the directory most of the
// time with the link there for moments: a check then mostly passes, which
// git_diff needs (a status that sees the link reads nothing), and a use
// right after it can still meet the link.
func exchange(t *testing.T, a, b string, maxPause time.Duration) (stop func()) {
	t.Helper()
	for range 2 { // and back
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			t.Skipf("renameat2(RENAME_EXCHANGE): %v", err)
		}
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
			unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
			if maxPause > 0 {
				pause := rand.N(maxPause)
				for t0 := time.Now(); time.Since(t0) < pause; {
				}
			}
		}
	})
	return func() { done.Store(true); wg.Wait() }
}

// snapshot is every file, directory and link under dir with its content,
// to tell that nothing outside the workspace was written.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			m[p] = "link " + target
			return err
		case d.IsDir():
			m[p] = "dir"
		default:
			b, err := os.ReadFile(p)
			m[p] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if w, ok := before[p]; !ok || w != v {
			t.Errorf("outside the workspace %s changed: %q, was %q", p, v, w)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("outside the workspace %s was removed", p)
		}
	}
}

// all is the text and error of an output.
func all(out skills.Output) string { return out.Text() + "\n" + out.ErrorText() }

// TestGitDiffRaceStaysInside: docs/ is swapped with a symlink to a
// directory outside holding the same names while git_diff reads the
// modified files under it; no diff may show the outside content.
func TestGitDiffRaceStaysInside(t *testing.T) {
	t.Parallel()
	ws, ts := newRepo(t)
	outside := t.TempDir()
	names := []string{"b.txt"}
	for i := range 15 {
		names = append(names, "f"+string(rune('a'+i))+".txt")
	}
	for _, n := range names {
		write(t, ws, "docs/"+n, "inside\n")
		write(t, outside, n, secret+"\n")
	}
	if out := call(t, ts, "git_commit", map[string]any{"message": "docs", "all": true}); !out.Succeeded() {
		t.Fatalf("commit docs = %s", out.ErrorText())
	}
	for _, n := range names {
		write(t, ws, "docs/"+n, "changed\n")
	}
	if err := os.Symlink(outside, filepath.Join(ws, "docs.alt")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, outside)
	stop := exchange(t, filepath.Join(ws, "docs"), filepath.Join(ws, "docs.alt"), 400*time.Microsecond)
	deadline := time.Now().Add(raceBudget)
	calls, clean := 0, 0
	for time.Now().Before(deadline) {
		out := call(t, ts, "git_diff", nil)
		calls++
		if strings.Contains(all(out), secret) {
			stop()
			t.Fatalf("git_diff call %d read outside the workspace:\n%s", calls, all(out))
		}
		if out.Succeeded() {
			clean++
		}
	}
	stop()
	t.Logf("%d diffs under the race, %d answered", calls, clean)
	sameSnapshot(t, before, snapshot(t, outside))
}

// TestGitCommitRaceStaysInside: .git/refs/heads is swapped with a
// symlink to a directory outside holding the branch HEAD names while
// git_commit writes that branch; the outside file must stay as it was.
func TestGitCommitRaceStaysInside(t *testing.T) {
	t.Parallel()
	ws, ts := newRepo(t)
	outside := t.TempDir()
	write(t, outside, "victim", "ORIGINAL\n")
	write(t, ws, ".git/HEAD", "ref: refs/heads/victim\n")
	if err := os.Symlink(outside, filepath.Join(ws, ".git/refs/heads.alt")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, outside)
	stop := exchange(t, filepath.Join(ws, ".git/refs/heads"), filepath.Join(ws, ".git/refs/heads.alt"), 100*time.Microsecond)
	defer stop()
	deadline := time.Now().Add(raceBudget)
	commits := 0
	for i := 0; time.Now().Before(deadline); i++ {
		write(t, ws, "a.txt", strings.Repeat("x", i)+"\n")
		out := call(t, ts, "git_commit", map[string]any{"message": "m", "all": true})
		commits++
		if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "ORIGINAL\n" {
			stop()
			t.Fatalf("git_commit %d wrote outside the workspace: %q (%s)", commits, b, all(out))
		}
	}
	stop()
	t.Logf("%d commits under the race", commits)
	sameSnapshot(t, before, snapshot(t, outside))
}

// TestRepoFilesystemRace hammers the file systems the tools hand go-git
// directly, thousands of opens a second, while a directory along the
// path is swapped with a link outside: a read must never see the outside
// file, a write must never change it.
func TestRepoFilesystemRace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dir  string // swapped with dir+".alt", a link to outside
		// try opens the file under dir once, through wt or dot.
		try func(wt, dot billy.Filesystem) error
	}{{
		name: "read a work tree file",
		dir:  "docs",
		try: func(wt, _ billy.Filesystem) error {
			f, err := wt.Open("docs/b.txt")
			if err != nil {
				return nil
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			if strings.Contains(string(b), secret) {
				return errors.New("read the outside file")
			}
			return nil
		},
	}, {
		name: "write a ref",
		dir:  ".git/refs/heads",
		try: func(_, dot billy.Filesystem) error {
			f, err := dot.OpenFile("refs/heads/b.txt", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
			if err != nil {
				return nil
			}
			io.WriteString(f, "written\n")
			return f.Close()
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws, _ := newRepo(t)
			outside := t.TempDir()
			write(t, outside, "b.txt", secret+"\n")
			if err := os.MkdirAll(filepath.Join(ws, tc.dir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(ws, tc.dir+".alt")); err != nil {
				t.Fatal(err)
			}
			wt, dot, done, err := gittools.Filesystems(gittools.Options{Dir: ws})
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			before := snapshot(t, outside)
			stop := exchange(t, filepath.Join(ws, tc.dir), filepath.Join(ws, tc.dir+".alt"), 0)
			defer stop()
			deadline := time.Now().Add(fsRaceBudget)
			n := 0
			for ; time.Now().Before(deadline); n++ {
				if err := tc.try(wt, dot); err != nil {
					stop()
					t.Fatalf("try %d: %v", n, err)
				}
				if n%64 == 0 {
					if b, _ := os.ReadFile(filepath.Join(outside, "b.txt")); string(b) != secret+"\n" {
						stop()
						t.Fatalf("try %d wrote outside the workspace: %q", n, b)
					}
				}
			}
			stop()
			t.Logf("%d tries under the race", n)
			sameSnapshot(t, before, snapshot(t, outside))
		})
	}
}

// TestGitToolsSymlinksStatic: links planted in the worktree or in .git
// that lead outside. Every tool either fails or treats a worktree link as
// content (its target); none shows what is outside or writes there.
func TestGitToolsSymlinksStatic(t *testing.T) {
	link := func(t *testing.T, target, name string) {
		t.Helper()
		if err := os.RemoveAll(name); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	// copyDir copies the regular files of src into dst.
	copyDir := func(t *testing.T, src, dst string) {
		t.Helper()
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			write(t, dst, rel, string(b))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	const fakeHash = "1111111111111111111111111111111111111111"
	for _, tc := range []struct {
		name string
		// plant sets the links up; outside is an empty directory outside
		// the workspace.
		plant func(t *testing.T, ws, outside string)
		// forbidden may show in no output; want must show in one.
		forbidden, want []string
	}{{
		name: "worktree dir links outside",
		plant: func(t *testing.T, ws, outside string) {
			write(t, outside, "b.txt", secret+"\n")
			link(t, outside, filepath.Join(ws, "linked"))
		},
		forbidden: []string{secret},
		want:      []string{"?? linked", "+/"}, // committed as a link: its target
	}, {
		name: "tracked dir replaced by a link outside",
		plant: func(t *testing.T, ws, outside string) {
			write(t, outside, "b.txt", secret+"\n")
			link(t, outside, filepath.Join(ws, "docs"))
		},
		forbidden: []string{secret},
		want:      []string{" D docs/b.txt"},
	}, {
		name: "tracked file replaced by an absolute link outside",
		plant: func(t *testing.T, ws, outside string) {
			write(t, outside, "secret.txt", secret+"\n")
			link(t, filepath.Join(outside, "secret.txt"), filepath.Join(ws, "a.txt"))
		},
		forbidden: []string{secret},
		want:      []string{" M a.txt", "+/", "secret.txt"},
	}, {
		name: "tracked file replaced by a relative link climbing out",
		plant: func(t *testing.T, ws, outside string) {
			write(t, outside, "secret.txt", secret+"\n")
			rel, err := filepath.Rel(ws, filepath.Join(outside, "secret.txt"))
			if err != nil {
				t.Fatal(err)
			}
			link(t, rel, filepath.Join(ws, "a.txt"))
		},
		forbidden: []string{secret},
		want:      []string{" M a.txt", "+../"},
	}, {
		name: ".git/refs/heads links outside",
		plant: func(t *testing.T, ws, outside string) {
			write(t, outside, "master", fakeHash+"\n")
			write(t, outside, "victim", "ORIGINAL\n")
			link(t, outside, filepath.Join(ws, ".git/refs/heads"))
		},
		forbidden: []string{"1111111"},
	}, {
		name: ".git/refs/heads links outside, HEAD on a branch only there",
		plant: func(t *testing.T, ws, outside string) {
			write(t, outside, "victim", "ORIGINAL\n")
			write(t, ws, ".git/HEAD", "ref: refs/heads/victim\n")
			link(t, outside, filepath.Join(ws, ".git/refs/heads"))
		},
	}, {
		name: ".git/objects links to a copy outside",
		plant: func(t *testing.T, ws, outside string) {
			copyDir(t, filepath.Join(ws, ".git/objects"), outside)
			link(t, outside, filepath.Join(ws, ".git/objects"))
		},
		forbidden: []string{"first commit"},
	}, {
		name: ".git/config links outside",
		plant: func(t *testing.T, ws, outside string) {
			write(t, outside, "config", "[user]\n\tname = "+secret+"\n")
			link(t, filepath.Join(outside, "config"), filepath.Join(ws, ".git/config"))
		},
		forbidden: []string{secret},
	}, {
		name: ".git links to a copy outside",
		plant: func(t *testing.T, ws, outside string) {
			copyDir(t, filepath.Join(ws, ".git"), outside)
			link(t, outside, filepath.Join(ws, ".git"))
		},
		forbidden: []string{"first commit"},
		want:      []string{"not a directory"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ws, ts := newRepo(t)
			outside := t.TempDir()
			tc.plant(t, ws, outside)
			before := snapshot(t, outside)
			var got []string
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{"git_status", nil},
				{"git_diff", nil},
				{"git_diff", map[string]any{"staged": true}},
				{"git_log", nil},
				{"git_branch", nil},
				{"git_commit", map[string]any{"message": "after", "all": true}},
				{"git_diff", map[string]any{"ref": "HEAD"}},
				{"git_log", nil},
				{"git_status", nil},
			} {
				out := ts.Call(context.Background(), c.tool, c.args)
				got = append(got, all(out))
				for _, f := range tc.forbidden {
					if strings.Contains(all(out), f) {
						t.Errorf("%s %v shows %q from outside the workspace:\n%s", c.tool, c.args, f, all(out))
					}
				}
			}
			text := strings.Join(got, "\n")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("no output shows %q:\n%s", w, text)
				}
			}
			sameSnapshot(t, before, snapshot(t, outside))
		})
	}
}

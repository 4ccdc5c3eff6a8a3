package gittools_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/internal/gittools"
)

// childEnv makes this test binary a git call child (TestMain).
const childEnv = "EVOCLAW_GITTOOLS_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(gittools.Child(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// testRunner runs children of this test binary with memory bytes (0:
// the default).
func testRunner(t *testing.T, memory int64) *gittools.Runner {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A child built with -race would sleep a second at exit.
	return &gittools.Runner{Exe: exe, Env: []string{childEnv + "=1", "GORACE=atexit_sleep_ms=0"}, MemoryBytes: memory}
}

// toolset is the git tools over ws, run by child (nil: in this process).
func toolset(t *testing.T, ws string, child *gittools.Runner) *skills.Toolset {
	t.Helper()
	tools, err := gittools.Tools(gittools.Options{Dir: ws, Child: child})
	if err != nil {
		t.Fatal(err)
	}
	ts := skills.NewToolset(nil, skills.ExecOptions{Granted: []string{skills.PermGit}})
	if err := ts.Add(tools...); err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestChildAnswersAsInProcess: over an ordinary repository every tool
// answers the same in a child as in this process, failures included; a
// call too large to hand a child is refused as such; a commit made in a
// child is the repository's.
func TestChildAnswersAsInProcess(t *testing.T) {
	ws, _ := newRepo(t)
	write(t, ws, "a.txt", "one\nTWO\nthree\n")
	write(t, ws, "new.txt", "fresh\n")
	os.Remove(filepath.Join(ws, "docs/b.txt"))
	local, child := toolset(t, ws, nil), toolset(t, ws, testRunner(t, 0))
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"git_status", nil},
		{"git_diff", nil},
		{"git_diff", map[string]any{"staged": true}},
		{"git_diff", map[string]any{"path": "docs"}},
		{"git_diff", map[string]any{"path": "../x"}},
		{"git_diff", map[string]any{"ref": "HEAD"}},
		{"git_diff", map[string]any{"ref": "nope"}},
		{"git_log", map[string]any{"max_count": 1}},
		{"git_branch", nil},
		{"git_commit", map[string]any{"message": "m", "paths": []any{"../../etc/passwd"}}},
	} {
		want, got := local.Call(context.Background(), c.tool, c.args), child.Call(context.Background(), c.tool, c.args)
		want.Elapsed, got.Elapsed = 0, 0
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("%s %v in a child: %+v\nin process: %+v", c.tool, c.args, got, want)
		}
	}
	huge := child.Call(context.Background(), "git_commit", map[string]any{"message": strings.Repeat("m", 5<<20)})
	if huge.ErrorType() != wire.ErrInvalidParams || !strings.Contains(huge.ErrorText(), "more than the 4 MiB") {
		t.Errorf("a commit message of 5 MiB in a child: %+v", huge)
	}
	out := child.Call(context.Background(), "git_commit", map[string]any{"message": "from a child", "paths": []any{"a.txt"}})
	if !out.Succeeded() || !strings.Contains(out.Text(), "from a child") {
		t.Fatalf("commit in a child: %+v", out)
	}
	if out := local.Call(context.Background(), "git_log", map[string]any{"max_count": 1}); !strings.Contains(out.Text(), "from a child") {
		t.Fatalf("log after a child's commit: %q", out.Text())
	}
}

// TestChildRefusesABomb: a repository whose HEAD tree is a loose object
// of 64 KiB that inflates to 64 MiB fails git_status and git_diff in a
// child bounded to 16 MiB, saying so, and this process does not read it.
func TestChildRefusesABomb(t *testing.T) {
	ws, _ := newRepo(t)
	repo, err := git.PlainOpen(ws)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	fmt.Fprintf(w, "tree %d\x00", size)
	w.Write(make([]byte, size))
	w.Close()
	name := c.TreeHash.String()
	path := filepath.Join(ws, ".git", "objects", name[:2], name[2:])
	os.Remove(path)
	if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := toolset(t, ws, testRunner(t, 16<<20))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, tool := range []string{"git_status", "git_diff"} {
		start := time.Now()
		out := ts.Call(context.Background(), tool, nil)
		if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "needs more memory than the 16 MiB a git call may use") {
			t.Errorf("%s over a bomb: %+v", tool, out)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s answered after %v", tool, took)
		}
	}
	runtime.ReadMemStats(&after)
	if read := after.TotalAlloc - before.TotalAlloc; read > size/4 {
		t.Fatalf("this process allocated %d MiB", read>>20)
	}
}

// TestChildFailures: a child that runs past the deadline is killed and
// the call is a timeout; one that dies or cannot start is an internal
// error naming why.
func TestChildFailures(t *testing.T) {
	ws, _ := newRepo(t)
	for _, c := range []struct {
		name  string
		child gittools.Runner
		code  wire.ErrorType
		says  string
	}{
		{"past the deadline", gittools.Runner{Exe: "sleep", Args: []string{"30"}}, wire.ErrTimeout, "no result before the deadline"},
		{"dies", gittools.Runner{Exe: "sh", Args: []string{"-c", "echo broken >&2; exit 3"}}, wire.ErrInternal, "git process failed (exit status 3: broken)"},
		{"no answer", gittools.Runner{Exe: "true"}, wire.ErrInternal, "git process failed (exit status 0)"},
		{"missing", gittools.Runner{Exe: filepath.Join(ws, "no-such-binary")}, wire.ErrInternal, "start the git process"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := toolset(t, ws, &c.child)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			out := ts.Call(ctx, "git_status", nil)
			if out.ErrorType() != c.code || !strings.Contains(out.ErrorText(), c.says) {
				t.Fatalf("%+v; want %s saying %q", out, c.code, c.says)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("answered after %v", took)
			}
		})
	}
}

package gittools_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/internal/gittools"
)

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository in a temporary workspace with one commit of
// a.txt and b.txt, and a toolset of the git tools over it.
func newRepo(t *testing.T) (string, *skills.Toolset) {
	t.Helper()
	ws := t.TempDir()
	repo, err := git.PlainInit(ws, false)
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws, "a.txt", "one\ntwo\nthree\n")
	write(t, ws, "docs/b.txt", "beta\n")
	wt, _ := repo.Worktree()
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Tester", Email: "t@example.invalid", When: time.Date(2025, 2, 15, 13, 0, 0, 0, time.UTC)}
	if _, err := wt.Commit("first commit\n\nwith a body", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	tools, err := gittools.Tools(gittools.Options{Dir: ws})
	if err != nil {
		t.Fatal(err)
	}
	ts := skills.NewToolset(nil, skills.ExecOptions{Granted: []string{skills.PermGit}})
	if err := ts.Add(tools...); err != nil {
		t.Fatal(err)
	}
	return ws, ts
}

func call(t *testing.T, ts *skills.Toolset, tool string, args map[string]any) skills.Output {
	t.Helper()
	return ts.Call(context.Background(), tool, args)
}

func TestGitTools(t *testing.T) {
	ws, ts := newRepo(t)
	if got := strings.Join(ts.Names(), ","); got != "git_branch,git_commit,git_diff,git_log,git_status" {
		t.Fatalf("tools %s", got)
	}
	if out := call(t, ts, "git_status", nil); out.Text() != "on branch master\nnothing to commit, working tree clean" {
		t.Fatalf("clean status %q %s", out.Text(), out.ErrorText())
	}
	write(t, ws, "a.txt", "one\nTWO\nthree\n")
	write(t, ws, "new.txt", "fresh\n")
	os.Remove(filepath.Join(ws, "docs/b.txt"))

	out := call(t, ts, "git_status", nil)
	for _, want := range []string{" M a.txt", " D docs/b.txt", "?? new.txt"} {
		if !strings.Contains(out.Text(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.Text())
		}
	}
	out = call(t, ts, "git_diff", nil)
	for _, want := range []string{"--- a/a.txt", "+++ b/a.txt", "-two", "+TWO", "deleted file mode", "-beta"} {
		if !strings.Contains(out.Text(), want) {
			t.Errorf("diff lacks %q:\n%s", want, out.Text())
		}
	}
	if strings.Contains(out.Text(), "new.txt") {
		t.Errorf("unstaged diff shows an untracked file:\n%s", out.Text())
	}
	if out := call(t, ts, "git_diff", map[string]any{"path": "docs"}); strings.Contains(out.Text(), "a.txt") || !strings.Contains(out.Text(), "b.txt") {
		t.Errorf("diff of docs:\n%s", out.Text())
	}
	if out := call(t, ts, "git_diff", map[string]any{"staged": true}); out.Text() != "no changes" {
		t.Errorf("staged diff before staging: %q", out.Text())
	}

	out = call(t, ts, "git_commit", map[string]any{"message": "change a", "paths": []any{"a.txt"}})
	if out.ErrorType() != "" || !strings.Contains(out.Text(), "[master ") || !strings.Contains(out.Text(), "change a") {
		t.Fatalf("commit = %q %s", out.Text(), out.ErrorText())
	}
	if out := call(t, ts, "git_commit", map[string]any{"message": "again"}); out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "nothing to commit") {
		t.Fatalf("empty commit = %+v", out)
	}
	if out := call(t, ts, "git_diff", map[string]any{"ref": "HEAD"}); !strings.Contains(out.Text(), "+TWO") || strings.Contains(out.Text(), "b.txt") {
		t.Fatalf("diff of HEAD:\n%s", out.Text())
	}
	out = call(t, ts, "git_commit", map[string]any{"message": "the rest", "all": true})
	if out.ErrorType() != "" {
		t.Fatalf("commit all = %+v", out)
	}
	if out := call(t, ts, "git_status", nil); !strings.HasSuffix(out.Text(), "working tree clean") {
		t.Fatalf("status after commit all:\n%s", out.Text())
	}
	out = call(t, ts, "git_log", nil)
	lines := strings.Split(out.Text(), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "evoclaw agent: the rest") || !strings.Contains(lines[2], "2025-02-15 13:00 Tester: first commit") {
		t.Fatalf("log:\n%s", out.Text())
	}
	if out := call(t, ts, "git_log", map[string]any{"max_count": 1, "path": "a.txt"}); !strings.Contains(out.Text(), "change a") || strings.Count(out.Text(), "\n") != 0 {
		t.Fatalf("log of a.txt:\n%s", out.Text())
	}
	if out := call(t, ts, "git_branch", nil); !strings.HasPrefix(out.Text(), "* master ") {
		t.Fatalf("branch:\n%s", out.Text())
	}
	// The git binary, where installed, reads what go-git wrote.
	if gitBin, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command(gitBin, "-C", ws, "log", "--format=%s")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		b, err := cmd.Output()
		if err != nil || string(b) != "the rest\nchange a\nfirst commit\n" {
			t.Fatalf("git log = %q, %v", b, err)
		}
	}
}

// TestGitToolsJail: paths leaving the workspace are refused, a
// workspace without a repository is not_found, and a .git file pointing
// elsewhere is not followed.
func TestGitToolsJail(t *testing.T) {
	_, ts := newRepo(t)
	for _, args := range []map[string]any{{"path": "../x"}, {"path": "/etc"}} {
		if out := call(t, ts, "git_diff", args); out.ErrorType() != wire.ErrInvalidParams {
			t.Errorf("git_diff %v = %+v", args, out)
		}
	}
	if out := call(t, ts, "git_commit", map[string]any{"message": "m", "paths": []any{"../../etc/passwd"}}); out.ErrorType() != wire.ErrInvalidParams {
		t.Errorf("commit outside = %+v", out)
	}

	empty := t.TempDir()
	tools, _ := gittools.Tools(gittools.Options{Dir: empty})
	if out := tools[0].Run(context.Background(), nil); out.ErrorType() != wire.ErrNotFound || !strings.Contains(out.ErrorText(), "not a git repository") {
		t.Errorf("status without a repository = %+v", out)
	}
	other, _ := newRepo(t)
	linked := t.TempDir()
	os.WriteFile(filepath.Join(linked, ".git"), []byte("gitdir: "+filepath.Join(other, ".git")+"\n"), 0o644)
	tools, _ = gittools.Tools(gittools.Options{Dir: linked})
	if out := tools[0].Run(context.Background(), nil); out.Succeeded() {
		t.Errorf("status through a .git file = %q", out.Text())
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// makeReadOnly removes every write permission under dir (and restores them
// at cleanup, so t.TempDir can remove it).
func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	chmodAll := func(mode func(os.FileMode) os.FileMode) {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				os.Chmod(p, mode(fi.Mode().Perm()))
			}
			return nil
		})
	}
	chmodAll(func(m os.FileMode) os.FileMode { return m &^ 0o222 })
	t.Cleanup(func() { chmodAll(func(m os.FileMode) os.FileMode { return m | 0o200 }) })
}

// runReadOnly runs the evoclaw binary with args while dir is read-only
// media. Permission bits do not stop root, so as root dir is also bind
// mounted read-only over itself in a private mount namespace (unshare -m);
// where that is impossible the test is skipped, saying why. The probe write
// inside proves the directory really is read-only for the command.
func runReadOnly(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin := evoclawBinary(t)
	var cmd *exec.Cmd
	const probe = `if ( : > "$1/.write-probe" ) 2>/dev/null; then echo "directory is writable" >&2; exit 99; fi; `
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("SKIPPED: running as root, where permission bits do not make a directory read-only, and unshare is missing")
		}
		if out, err := exec.Command("unshare", "-m", "sh", "-c", `mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1"`, "sh", dir).CombinedOutput(); err != nil {
			t.Skipf("SKIPPED: running as root, where permission bits do not make a directory read-only, and a read-only bind mount in a mount namespace failed: %v %s", err, out)
		}
		cmd = exec.Command("unshare", append([]string{"-m", "sh", "-c",
			`mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" || exit 98; ` + probe + `shift; exec "$@"`, "sh", dir, bin}, args...)...)
	} else {
		cmd = exec.Command("sh", append([]string{"-c", probe + `shift; exec "$@"`, "sh", dir, bin}, args...)...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	if code == 98 || code == 99 {
		t.Fatalf("could not make %s read-only (exit %d): %s", dir, code, errb.String())
	}
	return code, out.String(), errb.String()
}

// A data directory copied to read-only media, with or without the -wal and
// -shm files of a node that was running, can be queried and verified, and
// the records still only in the -wal are seen.
func TestAuditForensicsOnReadOnlyCopy(t *testing.T) {
	live := t.TempDir()
	s, err := sqlite.Open(filepath.Join(live, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, Tool: "shell", Status: persistence.StatusSuccess, ElapsedMs: int64(i)}
		if err := s.RecordToolCall(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	walPath := filepath.Join(live, orchestrator.AuditFile+"-wal")
	if fi, err := os.Stat(walPath); err != nil || fi.Size() == 0 {
		t.Fatalf("the running store has no -wal content to test with: %v", err)
	}
	// Copies taken while the node runs: the records are in the -wal.
	withAll := evoclawtest.CopyDir(t, live, nil)
	walOnly := evoclawtest.CopyDir(t, live, func(name string) bool { return !strings.HasSuffix(name, "-shm") })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed := evoclawtest.CopyDir(t, live, nil) // after Close: the -wal is folded in and gone
	if _, err := os.Stat(filepath.Join(closed, orchestrator.AuditFile+"-wal")); err == nil {
		t.Fatal("a closed store left its -wal behind")
	}
	for name, dir := range map[string]string{"db, -wal and -shm": withAll, "db and -wal": walOnly, "closed db": closed} {
		t.Run(name, func(t *testing.T) {
			makeReadOnly(t, dir)
			code, out, errOut := runReadOnly(t, dir, "audit", "sql", "--data-dir", dir, "--csv", "SELECT count(*) AS n FROM tool_calls")
			if code != 0 || out != "n\n"+strconv.Itoa(n)+"\n" {
				t.Errorf("audit sql: exit %d, out %q, err %s", code, out, errOut)
			}
			code, out, errOut = runReadOnly(t, dir, "audit", "verify", "--data-dir", dir)
			if code != 0 || !strings.Contains(out, "warm: ok") || !strings.Contains(out, strconv.Itoa(n)+" records verified") {
				t.Errorf("audit verify: exit %d\n%s%s", code, out, errOut)
			}
			ents, _ := os.ReadDir(dir)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Logf("files: %v", names)
		})
	}
}

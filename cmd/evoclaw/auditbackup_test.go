package main

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// bigAuditDir is auditDir with n records written by 8 goroutines at once
// (the writer commits them in groups), each carrying pad bytes.
func bigAuditDir(t *testing.T, n, pad int) string {
	t.Helper()
	dir := t.TempDir()
	s, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, AgentID: "pi1", Tool: "shell",
					Status: persistence.StatusSuccess, ElapsedMs: int64(i), ResultExcerpt: strings.Repeat("x", pad)}
				if err := s.RecordToolCall(context.Background(), c); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The command's exit codes and what it says: the copy's records and chain
// head, where the key must be kept, what else a restore needs; an existing
// DEST refused and left alone unless --force; usage errors exit 2.
func TestAuditBackupCommand(t *testing.T) {
	dir := auditDir(t, 4)
	writeFile(t, filepath.Join(dir, orchestrator.HTTPTokenFile), "token-of-the-node-000000\n")
	dest := filepath.Join(t.TempDir(), "trail.db")
	code, out, errOut := runArgs("audit", "backup", "--data-dir", dir, dest)
	for _, want := range []string{"4 records verified; head chain_seq 4", "integrity_check ok", "authenticated by key",
		"not in the copy: the audit key " + filepath.Join(dir, sqlite.KeyFileName), "mode 0600", "a restore also needs", "http-token"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q", want)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runArgs("audit", "verify", "--data-dir", dir, "--key", filepath.Join(dir, sqlite.KeyFileName)); code != 0 {
		t.Fatalf("source after the backup: exit %d\n%s%s", code, out, errOut)
	}
	before, _ := os.ReadFile(dest)
	if code, _, errOut := runArgs("audit", "backup", "--data-dir", dir, dest); code != 1 || !strings.Contains(errOut, "exists") || !strings.Contains(errOut, "--force") {
		t.Errorf("existing DEST: exit %d, %s", code, errOut)
	}
	if after, _ := os.ReadFile(dest); string(after) != string(before) {
		t.Errorf("existing DEST changed by a refused backup")
	}
	if code, _, errOut := runArgs("audit", "backup", "--data-dir", dir, "--force", dest); code != 0 {
		t.Errorf("--force: exit %d, %s", code, errOut)
	}
	for _, tt := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"audit", "backup", "--data-dir", dir}, 2, "one DEST"},
		{[]string{"audit", "backup", "--data-dir", dir, "a", "b"}, 2, "one DEST"},
		{[]string{"audit", "backup", "--data-dir", dir, "--key", "k", "--unkeyed", "x"}, 2, "exclude"},
		{[]string{"audit", "backup", "--data-dir", dir, "--all", "--force", "x"}, 2, "new directory"},
		{[]string{"audit", "backup", "--data-dir", t.TempDir(), filepath.Join(t.TempDir(), "x.db")}, 1, "audit.key"},
		{[]string{"audit", "backup", "--data-dir", t.TempDir(), "--unkeyed", filepath.Join(t.TempDir(), "x.db")}, 1, "no database file"},
		{[]string{"audit", "backup", "--data-dir", dir, "--all", filepath.Dir(dest)}, 1, "exists"},
	} {
		code, _, errOut := runArgs(tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.say) {
			t.Errorf("%q: exit %d, want %d saying %q: %s", tt.args, code, tt.code, tt.say, errOut)
		}
	}
}

// kill -9 of `audit backup` while it writes never leaves a DEST, and the
// next backup to the same DEST removes the killed one's temporary file.
func TestAuditBackupKilled(t *testing.T) {
	dir := bigAuditDir(t, 1000, 4000)
	out := t.TempDir()
	dest := filepath.Join(out, "trail.db")
	cmd := exec.Command(evoclawBinary(t), "audit", "backup", "--data-dir", dir, dest)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Poll without pause: the file lives for the copy and its check, a
	// few tens of milliseconds.
	var temp string
	for deadline := time.Now().Add(20 * time.Second); temp == "" && time.Now().Before(deadline); {
		if m, _ := filepath.Glob(filepath.Join(out, ".trail.db.backup-*")); len(m) > 0 {
			temp = m[0]
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(dest); err == nil {
		t.Fatal("a killed backup left DEST")
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("killed before its temporary file was gone? %v (%v): the test did not kill it mid-backup", err, cmd.ProcessState)
	}
	code, stdout, errOut := runBinary(t, "", "audit", "backup", "--data-dir", dir, dest)
	if code != 0 || !strings.Contains(stdout, "1000 records verified") {
		t.Fatalf("backup after the kill: exit %d\n%s%s", code, stdout, errOut)
	}
	if names := dirEntries(t, out); len(names) != 1 {
		t.Errorf("beside DEST after the second backup: %q, want only it", names)
	}
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A backup taken with --all from a running node, restored as the data
// directory of a new node, lets `serve` start and `audit verify` pass;
// the secrets are copied with mode 0600 in a 0700 directory. The same
// holds for the one-file backup with the key copied beside it, as
// docs/INSTALL.md restores it.
func TestAuditBackupRestore(t *testing.T) {
	dir := t.TempDir()
	p, _ := startScriptedServeProc(t, dir, "backup-node", `{"name":"b","turns":[{"content":"noted: {{user}}"}]}`, "")
	data := filepath.Join(dir, "node")
	if code, out, errOut := runBinary(t, "", "chat", "--data-dir", data, "remember the pump"); code != 0 || !strings.Contains(out, "noted") {
		t.Fatalf("chat: exit %d\n%s%s", code, out, errOut)
	}
	all := filepath.Join(t.TempDir(), "restore")
	code, out, errOut := runBinary(t, "", "audit", "backup", "--data-dir", data, "--all", all)
	if code != 0 || !strings.Contains(out, "also copied: audit.key (0600), http-token (0600)") {
		t.Fatalf("backup --all: exit %d\n%s%s", code, out, errOut)
	}
	one := filepath.Join(t.TempDir(), "one")
	if err := os.Mkdir(one, 0o700); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runBinary(t, "", "audit", "backup", "--data-dir", data, filepath.Join(one, orchestrator.AuditFile)); code != 0 {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	copyFile(t, filepath.Join(data, sqlite.KeyFileName), filepath.Join(one, sqlite.KeyFileName))
	p.interrupt(10 * time.Second)

	if fi, err := os.Stat(all); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("backup directory: %v %v, want mode 0700", fi, err)
	}
	for _, name := range []string{sqlite.KeyFileName, orchestrator.HTTPTokenFile, orchestrator.AuditFile} {
		if fi, err := os.Stat(filepath.Join(all, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s in the backup: %v %v, want mode 0600", name, fi, err)
		}
	}
	for _, restored := range []string{all, one} {
		_, m := startProc(t, procSpec{Ready: serveReady, Interrupt: true}, "serve", "--config", filepath.Join(dir, "evoclaw.toml"), "--data-dir", restored)
		if m == nil {
			t.Fatalf("serve on %s did not start", restored)
		}
		code, out, errOut := runBinary(t, "", "audit", "verify", "--data-dir", restored)
		if code != 0 || !strings.Contains(out, "warm: ok; its start and head are authenticated") {
			t.Errorf("audit verify of the restored %s: exit %d\n%s%s", restored, code, out, errOut)
		}
		code, out, _ = runBinary(t, "", "audit", "sql", "--data-dir", restored, "SELECT 'found-' || count(*) FROM messages WHERE role = 'user' AND body LIKE '%remember the pump%'")
		if code != 0 || !strings.Contains(out, "found-1") {
			t.Errorf("the chat before the backup is not in the restored %s: %s", restored, out)
		}
	}
}

// --all copies every file a restore needs: the secrets with mode 0600,
// the memory tool's database with the notes still in its -wal, the todo
// lists without an interrupted write's leftover.
func TestAuditBackupAllCopies(t *testing.T) {
	dir := auditDir(t, 3)
	for _, name := range []string{orchestrator.HTTPTokenFile, broker.UsersFileName} {
		writeFile(t, filepath.Join(dir, name), name+" secret\n")
	}
	if err := os.Mkdir(filepath.Join(dir, todoDir), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, todoDir, "0a1b.json"), `{"items":[]}`)
	writeFile(t, filepath.Join(dir, todoDir, ".tmp-123"), `{"it`)
	mem, err := sql.Open("sqlite", "file:"+filepath.Join(dir, memoryFile)+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for _, q := range []string{"CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('the pump is in the garage')"} {
		if _, err := mem.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	dest := filepath.Join(t.TempDir(), "all")
	code, out, errOut := runArgs("audit", "backup", "--data-dir", dir, "--all", dest)
	if code != 0 || !strings.Contains(out, "3 records verified") || !strings.Contains(out, "todos/ (1 lists)") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	want := map[string]os.FileMode{orchestrator.AuditFile: 0o600, sqlite.KeyFileName: 0o600, orchestrator.HTTPTokenFile: 0o600,
		broker.UsersFileName: 0o600, memoryFile: 0o600, todoDir: 0o700 | os.ModeDir}
	got := dirEntries(t, dest)
	if len(got) != len(want) {
		t.Errorf("backup holds %q, want %d entries", got, len(want))
	}
	for name, mode := range want {
		if fi, err := os.Stat(filepath.Join(dest, name)); err != nil || fi.Mode()&(os.ModeDir|os.ModePerm) != mode {
			t.Errorf("%s: %v %v, want mode %v", name, fi, err, mode)
		}
	}
	if got := dirEntries(t, filepath.Join(dest, todoDir)); len(got) != 1 || got[0] != "0a1b.json" {
		t.Errorf("todo lists copied: %q", got)
	}
	res, err := sqlite.QueryReadOnly(context.Background(), filepath.Join(dest, memoryFile), "SELECT body FROM notes")
	if err != nil || len(res.Rows) != 1 {
		t.Errorf("memory notes in the backup: %v %v", res, err)
	}
}

// --all run by root over a data directory its service user can write:
// a symbolic link planted there for a secret, the memory database, the
// todo directory or audit.db itself, or a FIFO for a secret, refuses the
// backup instead of copying what the link points to (which the documented
// restore then hands to that user) or waiting on the FIFO forever.
func TestAuditBackupAllRefusesLinks(t *testing.T) {
	// What the links point to: files the service user must not read.
	outside := t.TempDir()
	const secret = "root-only secret 7f3a"
	writeFile(t, filepath.Join(outside, "shadow"), secret+"\n")
	priv, err := sql.Open("sqlite", "file:"+filepath.Join(outside, "private.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE s (x TEXT)", "INSERT INTO s VALUES ('" + secret + "')"} {
		if _, err := priv.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	priv.Close()
	other := auditDir(t, 2) // another node's trail, with its key

	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir string)
	}{
		{orchestrator.HTTPTokenFile, func(t *testing.T, dir string) {
			symlink(t, filepath.Join(outside, "shadow"), filepath.Join(dir, orchestrator.HTTPTokenFile))
		}},
		{broker.UsersFileName, func(t *testing.T, dir string) {
			path := filepath.Join(dir, broker.UsersFileName)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			// The old code blocked opening the FIFO: give it an empty
			// writer after a while, so that it fails rather than hangs.
			timer := time.AfterFunc(2*time.Second, func() {
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
			t.Cleanup(func() { timer.Stop() })
		}},
		{memoryFile, func(t *testing.T, dir string) {
			symlink(t, filepath.Join(outside, "private.db"), filepath.Join(dir, memoryFile))
		}},
		{todoDir, func(t *testing.T, dir string) { symlink(t, outside, filepath.Join(dir, todoDir)) }},
		{orchestrator.AuditFile, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, orchestrator.AuditFile))
			symlink(t, filepath.Join(other, orchestrator.AuditFile), filepath.Join(dir, orchestrator.AuditFile))
			os.Remove(filepath.Join(dir, sqlite.KeyFileName))
			symlink(t, filepath.Join(other, sqlite.KeyFileName), filepath.Join(dir, sqlite.KeyFileName))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := auditDir(t, 3)
			tc.plant(t, dir)
			dest := filepath.Join(t.TempDir(), "all")
			code, out, errOut := runArgs("audit", "backup", "--data-dir", dir, "--all", dest)
			if code != 1 || !strings.Contains(errOut, tc.name) || !strings.Contains(errOut, "symbolic link") {
				t.Errorf("exit %d, want 1 naming %s as a link\n%s%s", code, tc.name, out, errOut)
			}
			if _, err := os.Lstat(dest); err == nil {
				t.Errorf("%s was written", dest)
			}
			filepath.WalkDir(filepath.Dir(dest), func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
						t.Errorf("%s holds the linked file's content", path)
					}
				}
				return nil
			})
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

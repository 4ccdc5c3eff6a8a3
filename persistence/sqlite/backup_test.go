package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// recordN records n tool calls in s, from 8 goroutines at once (the
// writer commits them in groups).
func recordN(t testing.TB, s *Store, n int, resultBytes int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, AgentID: "pi1", Tool: "shell",
					Status: persistence.StatusSuccess, ElapsedMs: int64(i), ResultExcerpt: strings.Repeat("r", resultBytes)}
				if err := s.RecordToolCall(context.Background(), c); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
}

// dirNames lists dir's entries.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// countRecords counts the chained records of the database at path.
func countRecords(t testing.TB, path string) int64 {
	t.Helper()
	res, err := QueryReadOnly(context.Background(), path, "SELECT count(*) FROM tool_calls")
	if err != nil {
		t.Fatal(err)
	}
	return res.Rows[0][0].(int64)
}

// A backup taken while writers keep committing is one consistent snapshot:
// its chain verifies with the source's key, it holds at least what was
// committed before it started and at most what was committed when it
// ended, and the writers never failed meanwhile.
func TestBackupBesideWriters(t *testing.T) {
	s, path := openStore(t, Options{})
	recordN(t, s, 600, 200)
	before := countRecords(t, path)

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var written atomic.Int64
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, AgentID: "pi1", Tool: "shell", Status: persistence.StatusSuccess}
				if err := s.RecordToolCall(context.Background(), c); err != nil {
					errs <- err
					return
				}
				written.Add(1)
			}
		}()
	}
	// Some commits land while the copy runs: small steps make it long.
	for ctx.Err() == nil && written.Load() < 50 {
		time.Sleep(time.Millisecond)
	}
	dst := filepath.Join(t.TempDir(), "backup.db")
	during := written.Load()
	res, err := Backup(context.Background(), path, dst, BackupOptions{StepPages: 4})
	during = written.Load() - during
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("writer failed beside the backup: %v", err)
	}
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if during == 0 {
		t.Errorf("no commit while the backup ran: the writers were blocked")
	}
	after := countRecords(t, path)
	got := countRecords(t, dst)
	if got < before+50 || got > after {
		t.Errorf("backup holds %d records; %d were committed before it, at least %d when it started, %d after it", got, before, before+50, after)
	}
	rep, err := VerifyChainWith(context.Background(), dst, VerifyOptions{KeyFile: DefaultKeyFile(path)})
	if err != nil || rep.KeyID == "" {
		t.Fatalf("backup does not verify with the source's key: %v (%+v)", err, rep)
	}
	if res.Chain == nil || res.Chain.HeadSeq != rep.HeadSeq || res.Chain.Verified != rep.Verified || res.KeyFile != DefaultKeyFile(path) {
		t.Errorf("result %+v, chain %+v; verify says %+v", res, res.Chain, rep)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Size() != res.Bytes || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file %v %v, result says %d bytes; want mode 0600", fi, err, res.Bytes)
	}
	if names := dirNames(t, filepath.Dir(dst)); len(names) != 1 {
		t.Errorf("beside the backup: %q, want only it (no temporary file, journal, -wal or -shm)", names)
	}
}

// fileSums hashes every file of dir.
func fileSums(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, name := range dirNames(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			out[name] = sha256.Sum256(b)
		}
	}
	return out
}

// Backup reads its source and writes only the destination: the files of
// a database at rest, -wal included, are byte for byte the same after it,
// and nothing is added beside them.
func TestBackupLeavesSourceAlone(t *testing.T) {
	s, path := openStore(t, Options{})
	// Fewer commits than checkpointEvery: no checkpoint runs, the records
	// stay in the -wal (as a node killed before a checkpoint leaves them)
	// and Backup must copy them from there.
	recordN(t, s, checkpointEvery-4, 100)
	dir := filepath.Dir(path)
	sums := fileSums(t, dir)
	if _, ok := sums[filepath.Base(path)+"-wal"]; !ok {
		t.Fatalf("no -wal beside the open store: %q", dirNames(t, dir))
	}
	dst := filepath.Join(t.TempDir(), "copy.db")
	if _, err := Backup(context.Background(), path, dst, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	after := fileSums(t, dir)
	for name, sum := range sums {
		if strings.HasSuffix(name, "-shm") {
			continue // SQLite's shared-memory index, which readers update by design
		}
		if after[name] != sum {
			t.Errorf("%s changed by the backup", name)
		}
	}
	if len(after) != len(sums) {
		t.Errorf("files beside the source: %q, before %d", dirNames(t, dir), len(sums))
	}
	if got, want := countRecords(t, dst), countRecords(t, path); got != want || got != checkpointEvery-4 {
		t.Errorf("backup holds %d records, source %d, want %d", got, want, checkpointEvery-4)
	}
}

// What Backup refuses, and that a refusal or a failed check leaves the
// destination as it was and nothing beside it.
func TestBackupRefusals(t *testing.T) {
	old := []byte("an older backup")
	tests := []struct {
		name    string
		prepare func(t *testing.T, src, dst string) (string, BackupOptions) // returns the destination
		wantErr error                                                       // errors.Is; nil: a substring is checked
		wantMsg []string
		keep    []byte // dst's content afterwards; nil: dst absent
	}{
		{"destination exists", func(t *testing.T, src, dst string) (string, BackupOptions) {
			writeBytes(t, dst, old)
			return dst, BackupOptions{}
		}, ErrBackupExists, []string{"exists"}, old},
		{"destination is a directory", func(t *testing.T, src, dst string) (string, BackupOptions) {
			return filepath.Dir(dst), BackupOptions{}
		}, nil, []string{"is a directory"}, nil},
		{"destination is the source", func(t *testing.T, src, dst string) (string, BackupOptions) {
			return src, BackupOptions{Overwrite: true}
		}, nil, []string{"the database itself"}, nil},
		{"no key", func(t *testing.T, src, dst string) (string, BackupOptions) {
			return dst, BackupOptions{KeyFile: filepath.Join(t.TempDir(), "audit.key")}
		}, ErrKeyMissing, []string{"--unkeyed"}, nil},
		{"no room", func(t *testing.T, src, dst string) (string, BackupOptions) {
			return dst, BackupOptions{freeSpace: func(string) (int64, error) { return 4096, nil }}
		}, ErrBackupNoRoom, []string{"4.0 KiB free", "needs about", "nothing was written"}, nil},
		{"no room, existing destination kept", func(t *testing.T, src, dst string) (string, BackupOptions) {
			writeBytes(t, dst, old)
			return dst, BackupOptions{Overwrite: true, freeSpace: func(string) (int64, error) { return 0, nil }}
		}, ErrBackupNoRoom, []string{"0 bytes free"}, old},
		{"broken chain in the source", func(t *testing.T, src, dst string) (string, BackupOptions) {
			tamperSchema(t, src, "UPDATE tool_calls SET elapsed_ms = 99 WHERE chain_seq = 3")
			writeBytes(t, dst, old)
			return dst, BackupOptions{Overwrite: true}
		}, auditchain.ErrBroken, []string{"does not check", "nothing was written"}, old},
		{"missing source", func(t *testing.T, src, dst string) (string, BackupOptions) {
			os.Remove(src)
			return dst, BackupOptions{Unkeyed: true}
		}, nil, []string{"no database file"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, src := openStore(t, Options{})
			recordN(t, s, 20, 10)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "backup.db")
			dst2, o := tt.prepare(t, src, dst)
			_, err := Backup(context.Background(), src, dst2, o)
			if err == nil {
				t.Fatal("Backup succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
			b, rerr := os.ReadFile(dst)
			switch {
			case tt.keep == nil && rerr == nil:
				t.Errorf("destination written: %d bytes", len(b))
			case tt.keep != nil && !bytes.Equal(b, tt.keep):
				t.Errorf("destination changed: %q (%v)", b, rerr)
			}
			var want []string
			if tt.keep != nil {
				want = []string{"backup.db"}
			}
			if got := dirNames(t, filepath.Dir(dst)); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("beside the destination: %q, want %q", got, want)
			}
		})
	}
}

func writeBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Overwrite replaces an existing destination with the new copy.
func TestBackupOverwrite(t *testing.T) {
	s, src := openStore(t, Options{})
	recordN(t, s, 10, 10)
	dst := filepath.Join(t.TempDir(), "backup.db")
	writeBytes(t, dst, []byte("old"))
	if _, err := Backup(context.Background(), src, dst, BackupOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if n := countRecords(t, dst); n != 10 {
		t.Fatalf("replaced backup holds %d records, want 10", n)
	}
}

// A disk that fills up while the copy is written fails the backup with
// a *NoRoomError and leaves nothing behind on it, on a real, tiny tmpfs.
func TestBackupDiskFullMidway(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root to mount a small tmpfs")
	}
	s, src := openStore(t, Options{})
	recordN(t, s, 1000, 500) // over a MiB
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs here (%v)", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, 0) })
	dst := filepath.Join(mnt, "backup.db")
	// The check ahead would refuse: make it believe there is room, as when
	// another writer takes the space while the copy runs.
	_, err := Backup(context.Background(), src, dst, BackupOptions{freeSpace: func(string) (int64, error) { return 1 << 40, nil }})
	var nr *NoRoomError
	if !errors.As(err, &nr) || nr.Free != -1 || !strings.Contains(err.Error(), "filled up during the backup") {
		t.Fatalf("Backup on a full disk: %v, want a NoRoomError saying it filled up", err)
	}
	if names := dirNames(t, mnt); len(names) != 0 {
		t.Errorf("left on the full disk: %q", names)
	}
}

// The temporary file of a backup whose process is gone (killed) is
// removed by the next backup to the same destination; one of a live
// process is left alone.
func TestBackupSweepsKilledTemps(t *testing.T) {
	s, src := openStore(t, Options{})
	recordN(t, s, 5, 10)
	dir := t.TempDir()
	dst := filepath.Join(dir, "b.db")
	dead := filepath.Join(dir, ".b.db.backup-999999999-123")
	live := filepath.Join(dir, ".b.db.backup-1-456") // pid 1 always runs
	other := filepath.Join(dir, ".c.db.backup-999999999-789")
	for _, p := range []string{dead, live, other} {
		writeBytes(t, p, []byte("partial"))
	}
	if _, err := Backup(context.Background(), src, dst, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]string{".b.db.backup-1-456", ".c.db.backup-999999999-789", "b.db"})
	if got := fmt.Sprint(dirNames(t, dir)); got != want {
		t.Errorf("after the backup: %s, want %s", got, want)
	}
}

// A cancelled context stops the copy between steps and removes what it
// wrote.
func TestBackupCancelled(t *testing.T) {
	s, src := openStore(t, Options{})
	recordN(t, s, 50, 200)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	_, err := Backup(ctx, src, filepath.Join(dir, "b.db"), BackupOptions{StepPages: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Backup with a cancelled context: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("left behind: %q", names)
	}
}

// BenchmarkBackupBesideWriter measures, on a database of
// $EVOCLAW_BACKUP_BENCH_RECORDS records (default 100,000), how long a
// backup takes and what one writer's commits (a chat's audit records)
// take meanwhile, against the same writer with no backup. Run it with
// -benchtime=1x. With $EVOCLAW_BACKUP_BENCH_DIR the database is built
// there and kept, to measure a real node on it.
func BenchmarkBackupBesideWriter(b *testing.B) {
	n := 100_000
	if v := os.Getenv("EVOCLAW_BACKUP_BENCH_RECORDS"); v != "" {
		fmt.Sscan(v, &n)
	}
	path := filepath.Join(b.TempDir(), "audit.db")
	if d := os.Getenv("EVOCLAW_BACKUP_BENCH_DIR"); d != "" {
		path = filepath.Join(d, "audit.db")
	}
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if have := countRecords(b, path); have < int64(n) {
		recordN(b, s, n-int(have), 300)
	}
	// latencies runs one writer until stop is closed and returns its
	// commit times, sorted.
	latencies := func(stop <-chan struct{}) []time.Duration {
		var out []time.Duration
		for {
			select {
			case <-stop:
				sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
				return out
			default:
			}
			t0 := time.Now()
			c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, AgentID: "pi1", Tool: "shell", Status: persistence.StatusSuccess, ResultExcerpt: "ok"}
			if err := s.RecordToolCall(context.Background(), c); err != nil {
				b.Error(err)
			}
			out = append(out, time.Since(t0))
		}
	}
	pct := func(d []time.Duration, p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		return float64(d[int(float64(len(d)-1)*p)].Microseconds())
	}
	for b.Loop() {
		stop := make(chan struct{})
		go func() { time.Sleep(time.Second); close(stop) }()
		idle := latencies(stop)

		stop = make(chan struct{})
		got := make(chan []time.Duration)
		go func() { got <- latencies(stop) }()
		dst := filepath.Join(b.TempDir(), "backup.db")
		t0 := time.Now()
		res, err := Backup(context.Background(), path, dst, BackupOptions{})
		took := time.Since(t0)
		close(stop)
		busy := <-got
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(took.Milliseconds()), "backup-ms")
		b.ReportMetric(float64(res.Bytes>>20), "backup-MiB")
		b.ReportMetric(pct(idle, 0.5), "idle-p50-µs")
		b.ReportMetric(pct(idle, 0.99), "idle-p99-µs")
		b.ReportMetric(pct(idle, 1), "idle-max-µs")
		b.ReportMetric(pct(busy, 0.5), "during-p50-µs")
		b.ReportMetric(pct(busy, 0.99), "during-p99-µs")
		b.ReportMetric(pct(busy, 1), "during-max-µs")
		b.ReportMetric(float64(len(busy)), "during-commits")
	}
}

// OwnFile refuses a source reached through a symbolic link, both the link
// seen before SQLite opens it and one swapped in meanwhile (SQLite then
// names the link's target as the file it opened), and accepts the file
// itself, also in a directory reached through a link.
func TestBackupOwnFile(t *testing.T) {
	ctx := context.Background()
	real := t.TempDir()
	src := filepath.Join(real, "audit.db")
	s, err := Open(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	recordN(t, s, 3, 10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	linkFile, linkDir := filepath.Join(links, "audit.db"), filepath.Join(links, "dir")
	for target, link := range map[string]string{src: linkFile, real: linkDir} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(real, KeyFileName), filepath.Join(links, KeyFileName)); err != nil {
		t.Fatal(err)
	}

	_, err = Backup(ctx, linkFile, filepath.Join(t.TempDir(), "b.db"), BackupOptions{OwnFile: true})
	if !errors.Is(err, ErrNotOwnFile) {
		t.Errorf("backup of a link: %v, want ErrNotOwnFile", err)
	}
	res, err := Backup(ctx, filepath.Join(linkDir, "audit.db"), filepath.Join(t.TempDir(), "b.db"), BackupOptions{OwnFile: true})
	if err != nil || res.Chain.Verified != 3 {
		t.Errorf("backup of the file in a linked directory: %+v, %v", res, err)
	}

	for _, tc := range []struct {
		opened, src string // the file SQLite opened, the source asked for
		want        error
	}{
		{linkFile, linkFile, ErrNotOwnFile}, // a link swapped in after the Lstat
		{src, src, nil},
		{filepath.Join(linkDir, "audit.db"), filepath.Join(linkDir, "audit.db"), nil},
	} {
		conn, closeConn, err := openReadOnly(ctx, tc.opened)
		if err != nil {
			t.Fatal(err)
		}
		err = openedItself(ctx, conn, tc.src)
		closeConn()
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s opened as %s: %v, want %v", tc.src, tc.opened, err, tc.want)
		}
	}

	// A -wal and no -shm on a read-only file system: openReadOnly reads a
	// private copy, which is the file itself only where nothing can be
	// swapped in.
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root to mount a read-only tmpfs")
	}
	s, err = Open(filepath.Join(t.TempDir(), "audit.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recordN(t, s, 2, 10)
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs here (%v)", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, 0) })
	for _, name := range []string{"audit.db", "audit.db-wal"} {
		if err := copyFile(filepath.Join(filepath.Dir(s.path), name), filepath.Join(mnt, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{true, false} {
		fsReadOnly = func(string) bool { return readOnly }
		_, err := BackupDatabase(ctx, filepath.Join(mnt, "audit.db"), filepath.Join(t.TempDir(), "b.db"), BackupOptions{OwnFile: true})
		fsReadOnly = DirReadOnly
		if readOnly && err != nil {
			t.Errorf("private copy on a read-only file system: %v", err)
		}
		if !readOnly && !errors.Is(err, ErrNotOwnFile) {
			t.Errorf("private copy on a writable file system: %v, want ErrNotOwnFile", err)
		}
	}
}

// A source that is not a regular file (a FIFO planted for audit.db) is
// refused at once: SQLite opening it waited forever, past SIGTERM.
func TestBackupRefusesFIFO(t *testing.T) {
	src := filepath.Join(t.TempDir(), "audit.db")
	if err := syscall.Mkfifo(src, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := BackupDatabase(context.Background(), src, filepath.Join(t.TempDir(), "b.db"), BackupOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("backup of a FIFO: %v, want not a regular file", err)
		}
	case <-time.After(3 * time.Second):
		// Free the old code's open with an empty writer, then fail.
		if f, err := os.OpenFile(src, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("backup of a FIFO still waiting after 3s")
	}
}

package sqlite

// This file takes a consistent copy of an audit database while its node
// may be writing to it.
//
// It uses SQLite's online backup API (sqlite3_backup_*, which
// modernc.org/sqlite exposes as NewBackup on its driver connection) rather
// than VACUUM INTO:
//   - the backup copies the pages as they are, an exact image of one
//     snapshot; VACUUM INTO rebuilds every table and index into a new file,
//     CPU a small board then lacks for the node and a read transaction held
//     all that longer;
//   - it runs in steps of a bounded number of pages, between which a
//     cancelled context stops it and progress can be counted; VACUUM INTO
//     is one statement;
//   - VACUUM INTO writes through the source connection, which the read-only
//     lockdown every audit reader gets (mode=ro, query_only, no ATTACH)
//     would have to give up; the backup writes through a connection of its
//     own to the new file only.
//
// The backup's own steps release the source's read lock between them, and a
// commit by another process then restarts the copy from its first page: a
// busy node would keep a large backup from ever finishing. So the whole copy
// runs inside one read transaction on the source connection, which the
// steps share: one snapshot, never restarted. In WAL mode a reader does not
// block the writer; the node's PASSIVE checkpoints only cannot reuse the log
// behind the snapshot until the backup ends, so the -wal grows by what is
// written meanwhile.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"modernc.org/sqlite"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// DefaultBackupStepPages is how many pages one backup step copies when
// BackupOptions.StepPages is zero: 4 MiB of 4 KiB pages, between two
// checks of the context.
const DefaultBackupStepPages = 1024

// backupJournalRoom is the room, in bytes, the backup needs besides the
// copy itself: the new file's rollback journal and the filesystem's own
// blocks.
const backupJournalRoom = 1 << 20

// Backup errors.
var (
	// ErrBackupExists refuses a destination that exists, unless
	// BackupOptions.Overwrite.
	ErrBackupExists = errors.New("backup destination exists")
	// ErrBackupNoRoom refuses a backup the destination's filesystem has no
	// room for; it is wrapped in a *NoRoomError.
	ErrBackupNoRoom = errors.New("not enough free space for the backup")
	// ErrNotOwnFile refuses a source that is a symbolic link or not a
	// regular file (a directory where a file belongs, a FIFO, a device):
	// a backup run by root of a data directory its service user can write
	// copies that directory's own files, never what a link planted there
	// points to.
	ErrNotOwnFile = errors.New("a symbolic link or a special file, not the directory's own file: refused")
)

// NoRoomError is a backup refused, or stopped, for want of space.
type NoRoomError struct {
	Dir  string // the destination's directory
	Need int64  // bytes the copy needs, about
	Free int64  // bytes free for this user when checked; -1 unknown (the disk filled up mid-way)
}

func (e *NoRoomError) Error() string {
	if e.Free < 0 {
		return fmt.Sprintf("the filesystem of %s filled up during the backup (the copy needs about %s); nothing was left behind", e.Dir, byteSize(e.Need))
	}
	return fmt.Sprintf("the backup needs about %s and the filesystem of %s has %s free; nothing was written", byteSize(e.Need), e.Dir, byteSize(e.Free))
}

// Unwrap makes errors.Is(err, ErrBackupNoRoom) hold.
func (e *NoRoomError) Unwrap() error { return ErrBackupNoRoom }

// BackupOptions tune Backup. The zero value refuses an existing
// destination and verifies the copy with the key beside the source.
type BackupOptions struct {
	// Overwrite replaces an existing destination file (atomically: it is
	// replaced only by a complete, verified copy).
	Overwrite bool
	// KeyFile is the key that sealed the source. Empty means
	// DefaultKeyFile of the source path.
	KeyFile string
	// Unkeyed verifies the copy's chain without the key (consistency only).
	Unkeyed bool
	// StepPages is how many pages one step copies; zero means
	// DefaultBackupStepPages.
	StepPages int
	// OwnFile refuses, with ErrNotOwnFile, a source that is a symbolic
	// link or not a regular file, and a copy SQLite read from any other
	// file than src itself: for a directory someone else can write.
	OwnFile bool

	// freeSpace reports the bytes free in a directory; nil means the
	// filesystem's. A test seam: it lets a backup start on a filesystem
	// too small for it, to fill it mid-way.
	freeSpace func(dir string) (int64, error)
}

// BackupResult says what Backup wrote.
type BackupResult struct {
	Path     string             // the destination
	Bytes    int64              // its size
	Pages    int                // pages copied
	Elapsed  time.Duration      // from opening the source to the rename
	Snapshot time.Duration      // the copy alone: how long the source's read transaction was held
	Chain    *auditchain.Report // the copy's verified chain: records, head
	KeyFile  string             // the key it was verified with; empty when Unkeyed
}

// Backup writes a consistent copy of the audit database at src to the new
// file dst, which may be taken while a node writes to src; src is only read
// (read-only connection) and never changed. The copy is written to a
// temporary file beside dst, synced, checked (integrity_check, then the
// hash chain as VerifyChainWith does) and only then renamed to dst: a
// crash or a kill never leaves a partial dst, and a failure removes the
// temporary file. Temporary files of backups killed earlier are removed
// first.
//
// A dst that exists is refused with ErrBackupExists unless o.Overwrite; a
// filesystem without room for the copy is refused before anything is
// written, with a *NoRoomError, which also reports a disk that fills up
// mid-way.
func Backup(ctx context.Context, src, dst string, o BackupOptions) (*BackupResult, error) {
	if o.KeyFile == "" && !o.Unkeyed {
		o.KeyFile = DefaultKeyFile(src)
	}
	return backup(ctx, src, dst, o, true)
}

// BackupDatabase is Backup for any SQLite database (the memory tool's, say):
// the copy is checked with integrity_check only, and o's key settings are
// not used.
func BackupDatabase(ctx context.Context, src, dst string, o BackupOptions) (*BackupResult, error) {
	o.KeyFile, o.Unkeyed = "", true
	return backup(ctx, src, dst, o, false)
}

func backup(ctx context.Context, src, dst string, o BackupOptions, chain bool) (*BackupResult, error) {
	start := time.Now()
	if o.StepPages <= 0 {
		o.StepPages = DefaultBackupStepPages
	}
	if fi, err := os.Stat(dst); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("back up to %s: it is a directory; name the new file", dst)
		}
		if !o.Overwrite {
			return nil, fmt.Errorf("back up to %s: %w", dst, ErrBackupExists)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("back up to %s: %w", dst, err)
	}
	if o.OwnFile {
		if fi, err := os.Lstat(src); err == nil && !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("back up %s: %w", src, ErrNotOwnFile)
		}
	}
	if same, err := sameFile(src, dst); err != nil || same {
		return nil, fmt.Errorf("back up to %s: that is the database itself", dst)
	}
	if chain && !o.Unkeyed {
		// Before the copy: a backup that cannot be verified is no backup.
		if _, err := ReadKey(o.KeyFile); err != nil {
			return nil, fmt.Errorf("back up %s: %w (--unkeyed checks the copy without it)", src, err)
		}
	}
	dir := filepath.Dir(dst)
	SweepBackupTemps(dst)

	// openReadOnly refuses a source that is not a regular file (a FIFO,
	// which SQLite's open waited on for ever).
	conn, closeSrc, err := openReadOnly(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("back up: %w", err)
	}
	// Closing the connection ends its read transaction (read-only: nothing
	// to commit) as soon as the pages are copied, so that the node's log can
	// start again while the copy is checked.
	closeConn := sync.OnceFunc(closeSrc)
	defer closeConn()
	if o.OwnFile {
		if err := openedItself(ctx, conn, src); err != nil {
			return nil, fmt.Errorf("back up %s: %w", src, err)
		}
	}
	// One read transaction for the whole copy: see the file comment.
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, fmt.Errorf("back up %s: %w", src, err)
	}
	var pages, pageSize int64
	if err := conn.QueryRowContext(ctx, "SELECT page_count, page_size FROM pragma_page_count, pragma_page_size").Scan(&pages, &pageSize); err != nil {
		return nil, fmt.Errorf("back up %s: %w", src, err)
	}
	need := pages*pageSize + backupJournalRoom
	free := o.freeSpace
	if free == nil {
		free = freeBytes
	}
	if n, err := free(dir); err != nil {
		return nil, fmt.Errorf("back up to %s: %w", dst, err)
	} else if n >= 0 && n < need {
		return nil, fmt.Errorf("back up to %s: %w", dst, &NoRoomError{Dir: dir, Need: need, Free: n})
	}

	tmp, err := os.CreateTemp(dir, BackupTempPrefix(dst)+"*")
	if err != nil {
		return nil, fmt.Errorf("back up to %s: %w", dst, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	done := false
	defer func() {
		if !done {
			removeDB(tmpPath)
		}
	}()
	copyStart := time.Now()
	copied, err := copyPages(ctx, conn, tmpPath, o.StepPages)
	if err != nil {
		if isFull(err) {
			return nil, fmt.Errorf("back up to %s: %w", dst, &NoRoomError{Dir: dir, Need: need, Free: -1})
		}
		return nil, fmt.Errorf("back up %s to %s: %w", src, dst, err)
	}
	closeConn()
	snapshot := time.Since(copyStart)
	if err := syncFile(tmpPath); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return nil, fmt.Errorf("back up to %s: %w", dst, &NoRoomError{Dir: dir, Need: need, Free: -1})
		}
		return nil, fmt.Errorf("back up to %s: sync: %w", dst, err)
	}
	rep, err := checkBackup(ctx, tmpPath, o, chain)
	if err != nil {
		return rep.result(dst, 0, copied, start, snapshot, o), fmt.Errorf("back up %s: the copy does not check, nothing was written to %s: %w", src, dst, err)
	}
	if o.Overwrite {
		err = os.Rename(tmpPath, dst)
	} else if err = os.Link(tmpPath, dst); err == nil { // never replaces a file that appeared meanwhile
		err = os.Remove(tmpPath)
	}
	if errors.Is(err, fs.ErrExist) {
		err = ErrBackupExists
	}
	if err != nil {
		return nil, fmt.Errorf("back up to %s: %w", dst, err)
	}
	done = true
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("back up to %s: sync its directory: %w", dst, err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return nil, fmt.Errorf("back up to %s: %w", dst, err)
	}
	return rep.result(dst, fi.Size(), copied, start, snapshot, o), nil
}

// chainReport carries a verified chain into a BackupResult.
type chainReport struct{ rep *auditchain.Report }

func (c chainReport) result(dst string, size int64, pages int, start time.Time, snapshot time.Duration, o BackupOptions) *BackupResult {
	r := &BackupResult{Path: dst, Bytes: size, Pages: pages, Elapsed: time.Since(start), Snapshot: snapshot, Chain: c.rep}
	if !o.Unkeyed {
		r.KeyFile = o.KeyFile
	}
	return r
}

// backupConn is what modernc.org/sqlite's driver connection offers for
// the online backup.
type backupConn interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
}

// copyPages copies the database of conn, in its open read transaction, to
// the empty file at path, stepPages at a time, and returns the pages
// copied. The copy's journal mode is made DELETE: it is one
// self-contained file, readable anywhere without -wal or -shm beside it; a
// node that opens it as its database puts it back in WAL mode.
func copyPages(ctx context.Context, conn interface {
	Raw(func(any) error) error
}, path string, stepPages int) (int, error) {
	uri, err := fileURI(path)
	if err != nil {
		return 0, err
	}
	var pages int
	err = conn.Raw(func(dc any) error {
		bc, ok := dc.(backupConn)
		if !ok {
			return fmt.Errorf("driver connection %T has no backup", dc)
		}
		b, err := bc.NewBackup(uri)
		if err != nil {
			return err
		}
		for more := true; more; {
			if err := ctx.Err(); err != nil {
				b.Finish()
				return err
			}
			if more, err = b.Step(int32(stepPages)); err != nil {
				b.Finish()
				return err
			}
		}
		pages = b.PageCount()
		dconn, err := b.Commit()
		if err != nil {
			return err
		}
		defer dconn.Close()
		ex, ok := dconn.(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot execute", dconn)
		}
		_, err = ex.ExecContext(ctx, "PRAGMA journal_mode=DELETE", nil)
		return err
	})
	return pages, err
}

// checkBackup runs integrity_check on the copy at path, then verifies its
// hash chain when chain.
func checkBackup(ctx context.Context, path string, o BackupOptions, chain bool) (chainReport, error) {
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return chainReport{}, err
	}
	var res string
	err = conn.QueryRowContext(ctx, "PRAGMA integrity_check(1)").Scan(&res)
	closeConn()
	if err != nil {
		return chainReport{}, fmt.Errorf("integrity_check: %w", err)
	}
	if res != "ok" {
		return chainReport{}, fmt.Errorf("integrity_check: %s", res)
	}
	if !chain {
		return chainReport{}, nil
	}
	rep, err := VerifyChainWith(ctx, path, VerifyOptions{KeyFile: o.KeyFile, Unkeyed: o.Unkeyed})
	return chainReport{rep}, err
}

// BackupTempPrefix names the temporary files (or directories) of backups to
// dst: hidden, beside it, with this process's id, so that a later backup
// can tell a killed backup's leftover from a running one's.
func BackupTempPrefix(dst string) string {
	return "." + filepath.Base(dst) + ".backup-" + strconv.Itoa(os.Getpid()) + "-"
}

// SweepBackupTemps removes the temporary files and directories that
// backups to dst killed earlier left (their process is gone), with their
// journals.
func SweepBackupTemps(dst string) {
	pattern := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".backup-*")
	matches, _ := filepath.Glob(pattern)
	prefix := "." + filepath.Base(dst) + ".backup-"
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), prefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || processAlive(pid) {
			continue
		}
		os.RemoveAll(m)
	}
}

// SyncDir fsyncs the directory dir, so that the entries made in it (a
// rename) survive a power cut.
func SyncDir(dir string) error { return syncDir(dir) }

// removeDB removes a database file and the files SQLite may keep beside it.
func removeDB(path string) {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// isFull reports SQLite's SQLITE_FULL (a full disk).
func isFull(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == 13 // SQLITE_FULL
}

// openedItself checks that the database conn reads is the file at src
// itself, not one a symbolic link swapped in at src led SQLite to (it
// resolves links before it opens): SQLite names the file it opened.
// On a read-only file system it may name the private copy openReadOnly
// made of src.
func openedItself(ctx context.Context, conn *sql.Conn, src string) error {
	abs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return err
	}
	var file string
	if err := conn.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		return err
	}
	if file == filepath.Join(dir, filepath.Base(abs)) {
		return nil
	}
	// openReadOnly read a private copy (a read-only directory without a
	// usable -shm, the case it copies for): nothing can be swapped in on
	// a read-only file system, so src checked above is what was copied.
	if fi, err := os.Lstat(src); err == nil && fi.Mode().IsRegular() && fsReadOnly(dir) {
		return nil
	}
	return ErrNotOwnFile
}

// CopyPrivateFile copies the regular file src to the new file dst, mode
// 0600, and syncs it: for the data directory's secrets a backup copies
// beside the database. A src that is a symbolic link or not a regular
// file (a FIFO is not waited on) is refused with ErrNotOwnFile.
func CopyPrivateFile(src, dst string) error {
	return CopyPrivateFileAt(nil, src, dst)
}

// OpenOwnDir opens the directory at path for CopyPrivateFileAt, refusing
// a symbolic link at path with ErrNotOwnFile.
func OpenOwnDir(path string) (*os.File, error) { return openOwnAt(nil, path, true) }

// CopyPrivateFileAt is CopyPrivateFile of the file name in the directory
// dir (from OpenOwnDir; nil: name is a path): a link swapped in for dir
// after it was opened is not followed either.
func CopyPrivateFileAt(dir *os.File, name, dst string) error {
	in, err := openOwnAt(dir, name, false)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, nil // openReadOnly says what is wrong with the source
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, nil
	}
	return os.SameFile(fa, fb), nil
}

// byteSize prints n bytes for people.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

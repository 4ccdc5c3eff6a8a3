package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/broker"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// The data directory's files, besides audit.db, that a restore needs.
const (
	memoryFile = "memory.db" // the memory tool's notes (SQLite)
	todoDir    = "todos"     // the todo tool's lists, one JSON file each
)

// secretFiles are the data directory's secrets, copied by --all with mode
// 0600: the audit key and the node's API token and broker passwords.
var secretFiles = []string{sqlite.KeyFileName, orchestrator.HTTPTokenFile, broker.UsersFileName}

// cmdAuditBackup writes a consistent, verified copy of a (possibly
// running) node's or agent's audit database, or with --all of everything
// its data directory needs for a restore.
func cmdAuditBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit backup", stderr)
	dataDir, conf := addDataDirFlags(fs)
	all := fs.Bool("all", false, "DEST is a new directory that receives a restorable data directory: audit.db, audit.key, http-token, mqtt-users (mode 0600), memory.db and the todo lists")
	force := fs.Bool("force", false, "replace an existing DEST file (only once the new copy is complete and verified)")
	keyFile := fs.String("key", "", "the key that sealed the database, to verify the copy (default: audit.key in --data-dir)")
	unkeyed := fs.Bool("unkeyed", false, "verify the copy's chain without the key (consistency only)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := conf.apply(fs, dataDir, nil); err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: audit backup takes one DEST (the new file, or with --all the new directory), got %q", errUsage, pos)
	}
	if *unkeyed && *keyFile != "" {
		return fmt.Errorf("%w: --key and --unkeyed exclude each other", errUsage)
	}
	if *all && *force {
		return fmt.Errorf("%w: --all writes a new directory and replaces none: remove the old one first", errUsage)
	}
	dest := pos[0]
	src := filepath.Join(*dataDir, orchestrator.AuditFile)
	o := sqlite.BackupOptions{Overwrite: *force, KeyFile: *keyFile, Unkeyed: *unkeyed}
	if !*all {
		res, err := sqlite.Backup(ctx, src, dest, o)
		if errors.Is(err, sqlite.ErrBackupExists) {
			return fmt.Errorf("%w; it was left as it is (--force replaces it once the new copy is complete and verified)", err)
		}
		if err != nil {
			return err
		}
		printBackup(stdout, src, res)
		fmt.Fprintf(stdout, "not in the copy: %s\n", keyAdvice(*dataDir, *keyFile, *unkeyed))
		if others := restoreFiles(*dataDir); len(others) > 0 {
			fmt.Fprintf(stdout, "a restore also needs, from %s: %s (evoclaw audit backup --all DIR copies them with the database)\n",
				*dataDir, strings.Join(others, ", "))
		}
		return nil
	}
	return backupAll(ctx, *dataDir, dest, o, stdout)
}

// printBackup says what was copied.
func printBackup(w io.Writer, src string, res *sqlite.BackupResult) {
	fmt.Fprintf(w, "backed up %s to %s: %d bytes (%.1f MiB, %d pages) in %s (snapshot held %s), integrity_check ok\n",
		src, res.Path, res.Bytes, float64(res.Bytes)/(1<<20), res.Pages, res.Elapsed.Round(time.Millisecond), res.Snapshot.Round(time.Millisecond))
	if rep := res.Chain; rep != nil {
		fmt.Fprintf(w, "chain %s: %d records verified; head chain_seq %d hash %s\n",
			auditchain.Printable(rep.ChainID), rep.Verified, rep.HeadSeq, rep.HeadHash)
		if rep.KeyID != "" {
			fmt.Fprintf(w, "its start and head are authenticated by key %s (%s)\n", rep.KeyID, res.KeyFile)
		} else {
			fmt.Fprintln(w, "verified without the key: consistency only")
		}
	}
}

// keyAdvice says where the key must be kept.
func keyAdvice(dataDir, keyFile string, unkeyed bool) string {
	if keyFile == "" {
		keyFile = filepath.Join(dataDir, sqlite.KeyFileName)
	}
	if unkeyed {
		return fmt.Sprintf("the audit key (%s, if the database has one): without it the copy's chain is checked for consistency only", keyFile)
	}
	return fmt.Sprintf("the audit key %s: keep a copy of it (mode 0600) with the backup and away from whoever must not be able to rewrite the trail; without it `evoclaw audit verify` cannot authenticate the restored chain", keyFile)
}

// restoreFiles lists what dataDir holds, besides audit.db, that a restore
// needs.
func restoreFiles(dataDir string) []string {
	var out []string
	for _, name := range append(append([]string(nil), secretFiles...), memoryFile, todoDir) {
		if _, err := os.Stat(filepath.Join(dataDir, name)); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// backupAll writes a restorable copy of dataDir to the new directory dest:
// built in a temporary directory beside it (mode 0700), synced, then
// renamed, so that dest is complete or absent.
func backupAll(ctx context.Context, dataDir, dest string, o sqlite.BackupOptions, w io.Writer) error {
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("back up to %s: %w: --all writes a new directory", dest, sqlite.ErrBackupExists)
	}
	if o.KeyFile == "" && !o.Unkeyed {
		o.KeyFile = filepath.Join(dataDir, sqlite.KeyFileName)
	}
	parent := filepath.Dir(dest)
	sqlite.SweepBackupTemps(dest)
	tmp, err := os.MkdirTemp(parent, sqlite.BackupTempPrefix(dest))
	if err != nil {
		return fmt.Errorf("back up to %s: %w", dest, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	// Every file is the data directory's own: its service user can write
	// the directory, and a link planted there (http-token to /etc/shadow,
	// todos to /root) must not put root's files into a backup that a
	// restore hands back to that user. Such a link refuses the backup.
	o.OwnFile = true
	src := filepath.Join(dataDir, orchestrator.AuditFile)
	res, err := sqlite.Backup(ctx, src, filepath.Join(tmp, orchestrator.AuditFile), o)
	if err != nil {
		return err
	}
	res.Path = filepath.Join(dest, orchestrator.AuditFile)
	var copied []string
	for _, name := range secretFiles {
		switch err := sqlite.CopyPrivateFile(filepath.Join(dataDir, name), filepath.Join(tmp, name)); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("back up %s: %w", name, err)
		default:
			copied = append(copied, name+" (0600)")
		}
	}
	if _, err := os.Lstat(filepath.Join(dataDir, memoryFile)); err == nil {
		if _, err := sqlite.BackupDatabase(ctx, filepath.Join(dataDir, memoryFile), filepath.Join(tmp, memoryFile), sqlite.BackupOptions{OwnFile: true}); err != nil {
			return fmt.Errorf("back up %s: %w", memoryFile, err)
		}
		copied = append(copied, memoryFile)
	}
	if n, err := copyTodos(filepath.Join(dataDir, todoDir), filepath.Join(tmp, todoDir)); err != nil {
		return fmt.Errorf("back up %s: %w", todoDir, err)
	} else if n >= 0 {
		copied = append(copied, fmt.Sprintf("%s/ (%d lists)", todoDir, n))
	}
	if err := sqlite.SyncDir(tmp); err != nil {
		return fmt.Errorf("back up to %s: %w", dest, err)
	}
	// Rename does not replace a non-empty directory, and Lstat above
	// refused an empty one: a dest made meanwhile fails here.
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("back up to %s: %w", dest, err)
	}
	done = true
	if err := sqlite.SyncDir(parent); err != nil {
		return fmt.Errorf("back up to %s: sync its directory: %w", dest, err)
	}
	printBackup(w, src, res)
	fmt.Fprintf(w, "also copied: %s\n", strings.Join(copied, ", "))
	fmt.Fprintf(w, "%s is a data directory (mode 0700): it holds the audit key and the node's secrets, so keep it as private as the original; restore it as the data directory of a stopped node (owned by its user), then run evoclaw audit verify --data-dir DIR\n", dest)
	return nil
}

// copyTodos copies the todo lists of src into the new directory dst and
// returns how many; -1 when there is no src. A list is replaced by a
// rename, so each copied file is one whole version of its list; the
// leftovers of an interrupted write (.tmp-*) are skipped, and so is an
// entry that is not a regular file (a symbolic link is not followed). A
// src that is a symbolic link is refused.
func copyTodos(src, dst string) (int, error) {
	d, err := sqlite.OpenOwnDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return 0, err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		switch err := sqlite.CopyPrivateFileAt(d, e.Name(), filepath.Join(dst, e.Name())); {
		case errors.Is(err, fs.ErrNotExist): // the list was removed meanwhile
		case errors.Is(err, sqlite.ErrNotOwnFile): // replaced meanwhile by a link or a special file
		case err != nil:
			return n, err
		default:
			n++
		}
	}
	return n, sqlite.SyncDir(dst)
}

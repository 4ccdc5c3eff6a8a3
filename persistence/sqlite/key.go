package sqlite

// This file keeps the key that authenticates the audit chain's anchors (its
// retention checkpoints and the seal of its head) in a file of its own,
// outside the database: a copy of the database alone cannot be forged.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// KeyFileName is the default name of the key file, beside the database.
const KeyFileName = "audit.key"

// Sentinel errors of the chain's key.
var (
	// ErrKeyMissing reports a database whose chain was sealed with a key
	// whose file is gone: a new key could not vouch for the old records.
	ErrKeyMissing = errors.New("audit key file is missing")
	// ErrKeyMismatch reports a key that is not the one that sealed the
	// database.
	ErrKeyMismatch = errors.New("audit key does not match the database")
)

// DefaultKeyFile returns where the key of the database at dbPath is kept
// when Options.KeyFile is empty: KeyFileName in the database's directory.
func DefaultKeyFile(dbPath string) string {
	return filepath.Join(filepath.Dir(dbPath), KeyFileName)
}

// ReadKey reads the key file at path.
func ReadKey(path string) (auditchain.Key, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return auditchain.Key{}, fmt.Errorf("%w: %s", ErrKeyMissing, path)
	}
	if err != nil {
		return auditchain.Key{}, fmt.Errorf("read audit key: %w", err)
	}
	k, err := auditchain.ParseKey(string(b))
	if err != nil {
		return k, fmt.Errorf("read audit key %s: %w", path, err)
	}
	return k, nil
}

// loadOrCreateKey returns the key at path, creating it (mode 0600) first
// when it is missing and create is true. Creation writes a temporary file,
// syncs it and links it into place, so a crash never leaves a partial key
// and two processes creating it at once end up with the same one.
func loadOrCreateKey(path string, create bool) (auditchain.Key, error) {
	k, err := ReadKey(path)
	if err == nil || !create || !errors.Is(err, ErrKeyMissing) {
		return k, err
	}
	if k, err = auditchain.NewKey(); err != nil {
		return k, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return k, fmt.Errorf("create audit key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".audit-key-*.tmp")
	if err != nil {
		return k, fmt.Errorf("create audit key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(k.String() + "\n")
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return k, fmt.Errorf("create audit key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return ReadKey(path) // another process created it first
	} else if err != nil {
		return k, fmt.Errorf("create audit key: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: the link survives a power cut
		d.Close()
	}
	return k, nil
}

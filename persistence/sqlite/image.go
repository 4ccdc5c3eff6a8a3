package sqlite

// A node's first start does not create its database with SQL: it writes
// an image of a new database, built into the binary (fresh.db, 220 KB),
// and SQLite opens that as it opens any existing one. Creating the
// schema with fresh.sql, mostly SQLite parsing it, was more than half of
// the CPU of opening a new audit trail (docs/PERFORMANCE.md).
//
// fresh.db is the database fresh.sql and the migrations' rows make (by
// migrate, with the writer's settings: WAL, the page size, user_version),
// except that the values a new database draws at random or derives from
// its key hold placeholders of the same length (imageFields). A copy with
// the real values in their place is byte for byte a database SQLite made:
// a record keeps its layout when a text keeps its length, and SQLite
// keeps no checksums of its pages. TestImageIsTheScriptsDatabase proves
// a database made from the image equal to one made by the script, schema,
// settings and rows, and that the image was written by the SQLite this
// build links; `go test ./persistence/sqlite -run
// TestImageIsTheScriptsDatabase -update` writes it again (after fresh.sql,
// when the migrations change).
//
// Crash safety: the image goes to a temporary file beside the database,
// is synced, renamed over the empty file and the directory synced, so a
// crash leaves an empty file (a new database at the next start, which
// sweeps the temporary file) or the whole image.

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

//go:embed fresh.db
var freshImage []byte

// imageTempPattern names the image's temporary file beside the database
// (os.CreateTemp pattern, after the database's base name).
const imageTempPattern = ".image-*.tmp"

// imageField is a value of a new database that depends on its chain id
// or its key; the image holds a placeholder of the same length instead.
type imageField struct {
	name string // the placeholder's first characters
	size int    // characters of the value
	// set stores the placeholder in the database the image is made from
	// (TestImageIsTheScriptsDatabase -update): one bound argument.
	set string
	// value is what a new database sealed with key has, for chainID.
	value func(key auditchain.Key, chainID string) string
}

// imageFields are what migrate writes into a new database besides the
// schema: the chain id (freshRows), and what adoptV5 stores for an empty
// chain: the key's id, the MAC of the (empty) bounds of rows that predate
// the chain, and the seal of the chain's genesis.
var imageFields = []imageField{
	{"chain_id", 32, `UPDATE audit_meta SET value = ? WHERE key = 'chain_id'`,
		func(_ auditchain.Key, id string) string { return id }},
	{"key_id", 16, `UPDATE audit_meta SET value = ? WHERE key = '` + metaKeyID + `'`,
		func(k auditchain.Key, _ string) string { return k.ID() }},
	{"legacy_mac", 64, `UPDATE audit_meta SET value = ? WHERE key = '` + metaLegacyMAC + `'`,
		func(k auditchain.Key, id string) string {
			return k.MACText(anchorLegacy, id, legacySummary(auditchain.Legacy{})).String()
		}},
	{"seal_hash", 64, `UPDATE chain_seal SET hash = ? WHERE id = 1`,
		func(_ auditchain.Key, id string) string { return auditchain.Genesis(id).String() }},
	{"seal_mac", 64, `UPDATE chain_seal SET mac = ? WHERE id = 1`,
		func(k auditchain.Key, id string) string {
			return k.MAC(auditchain.AnchorSeal, id, 0, auditchain.Genesis(id)).String()
		}},
}

// placeholder is what the image holds in the field's place.
func (f imageField) placeholder() string {
	return (f.name + strings.Repeat("*", f.size))[:f.size]
}

// newChainID draws a chain id as freshRows does: 16 random bytes, hex.
func newChainID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw chain id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// imageFor returns the image of a new database sealed with key, whose
// chain is chainID.
func imageFor(key auditchain.Key, chainID string) ([]byte, error) {
	img := bytes.Clone(freshImage)
	for _, f := range imageFields {
		ph := []byte(f.placeholder())
		i := bytes.Index(img, ph)
		if i < 0 || bytes.LastIndex(img, ph) != i {
			return nil, fmt.Errorf("the built-in database image does not hold %s once", f.name)
		}
		v := f.value(key, chainID)
		if len(v) != f.size {
			return nil, fmt.Errorf("database image: %s has %d characters, want %d", f.name, len(v), f.size)
		}
		copy(img[i:], v)
	}
	return img, nil
}

// imageFault is a fault seam for tests: it is called after each step of
// installing the image (imageWritten, imageSynced, imageRenamed), and an
// error stops the install there.
var imageFault = func(step string) error { return nil }

// Steps of installImage, for imageFault.
const (
	imageWritten = "written"
	imageSynced  = "synced"
	imageRenamed = "renamed"
)

// createFromImage makes the empty database file at path, which the caller
// has locked, a new database sealed with the key at keyFile (created when
// missing), from the image. It returns the lock of the new file (nil
// where the file system has none), and installed false, having done
// nothing, when the file is not empty or a log or journal lies beside it:
// SQLite then opens the file as it is. keyPredates is set when the key
// file was there before.
func createFromImage(path, keyFile string, keyPredates *bool) (lock *os.File, installed bool, err error) {
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		return nil, false, err
	}
	for _, suffix := range []string{"-wal", "-journal"} {
		// A leftover log or journal would be applied to the image.
		if _, err := os.Stat(path + suffix); !errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
	}
	if err := sweepImageTemps(path); err != nil {
		return nil, false, err
	}
	_, err = os.Stat(keyFile)
	*keyPredates = err == nil
	key, err := loadOrCreateKey(keyFile, true)
	if err != nil {
		return nil, false, err
	}
	chainID, err := newChainID()
	if err != nil {
		return nil, false, err
	}
	img, err := imageFor(key, chainID)
	if err != nil {
		return nil, false, err
	}
	if lock, err = installImage(path, img); err != nil {
		return nil, false, fmt.Errorf("create database from image: %w", err)
	}
	return lock, true, nil
}

// installImage writes img to a temporary file beside path, syncs it,
// locks it, renames it to path and syncs the directory. The lock on the
// file now at path is returned (nil where there is none): the caller's
// lock is on the file it replaced, which whoever opens path from now on
// does not see.
func installImage(path string, img []byte) (_ *os.File, err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+imageTempPattern)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(img); err != nil {
		return nil, err
	}
	if err := imageFault(imageWritten); err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	if err := imageFault(imageSynced); err != nil {
		return nil, err
	}
	// Locked before it is anybody's to open.
	unlocked, err := lockOpen(tmp)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	// From here a failure leaves the whole image at path: a database the
	// next start opens as it is.
	if err := imageFault(imageRenamed); err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	if unlocked {
		return nil, tmp.Close()
	}
	return tmp, nil
}

// sweepImageTemps removes what a first start cut short left of its image
// beside path.
func sweepImageTemps(path string) error {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	prefix, suffix, _ := strings.Cut("."+filepath.Base(path)+imageTempPattern, "*")
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove leftover database image: %w", err)
		}
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

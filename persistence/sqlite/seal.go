package sqlite

// This file keeps the chain's authenticated anchors (schema v5): the seal
// of the newest record, rewritten in every transaction that adds records;
// a MAC on every retention checkpoint; and the bound of the rows that
// predate the chain. Each is an HMAC under the key kept outside the
// database (key.go), so a forger holding only the database cannot move
// the chain's start or end, nor rewrite it and seal the result.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// sealVersion is the first schema version whose anchors are authenticated.
const sealVersion = 5

// audit_meta keys of schema v5.
const (
	metaKeyID      = "key_id"        // auditchain.Key.ID of the key that seals the chain
	metaLegacy     = "legacy_max_id" // rows that predate the chain, see legacySummary
	metaLegacyMAC  = "legacy_max_id_mac"
	anchorLegacy   = "legacy" // MAC kind of metaLegacy
	legacyIDColumn = "id"
)

// ErrChainTampered reports a database whose chain head is not the one the
// seal vouches for: records were added, removed or rewritten behind the
// Store's back. The Store refuses to continue (and so to seal) it.
var ErrChainTampered = errors.New("audit chain does not match its seal")

// adoptV5 runs in the transaction of migration v5: it records which key
// seals the chain, MACs the existing checkpoints, bounds the rows that
// predate the chain, and seals the current head. It vouches for the
// database as it is at the upgrade (trust on first use): a forgery made
// before the upgrade is not detected.
func adoptV5(ctx context.Context, tx dbtx, key auditchain.Key) error {
	chainID, err := readChainID(ctx, tx)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_meta (key, value) VALUES (?, ?)`, metaKeyID, key.ID()); err != nil {
		return fmt.Errorf("store key id: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, chain_seq, hash FROM chain_checkpoints`)
	if err != nil {
		return fmt.Errorf("read checkpoints: %w", err)
	}
	type cp struct {
		id, seq int64
		hash    string
	}
	var cps []cp
	for rows.Next() {
		var c cp
		if err := rows.Scan(&c.id, &c.seq, &c.hash); err != nil {
			rows.Close()
			return fmt.Errorf("read checkpoints: %w", err)
		}
		cps = append(cps, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read checkpoints: %w", err)
	}
	for _, c := range cps {
		d, err := auditchain.ParseDigest(c.hash)
		if err != nil {
			return fmt.Errorf("checkpoint at chain_seq %d: %w", c.seq, err)
		}
		mac := key.MAC(auditchain.AnchorCheckpoint, chainID, c.seq, d)
		if _, err := tx.ExecContext(ctx, `UPDATE chain_checkpoints SET mac = ? WHERE id = ?`, mac.String(), c.id); err != nil {
			return fmt.Errorf("authenticate checkpoint: %w", err)
		}
	}
	legacy := auditchain.Legacy{IDColumn: legacyIDColumn, MaxID: map[string]int64{}}
	for _, t := range auditchain.Tables {
		var m sql.NullInt64
		if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT max(id) FROM %s WHERE chain_seq IS NULL`, t.Name)).Scan(&m); err != nil {
			return fmt.Errorf("bound rows that predate the chain: %w", err)
		}
		legacy.MaxID[t.Name] = m.Int64
	}
	text := legacySummary(legacy)
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_meta (key, value) VALUES (?, ?), (?, ?)`,
		metaLegacy, text, metaLegacyMAC, key.MACText(anchorLegacy, chainID, text).String()); err != nil {
		return fmt.Errorf("store bound of rows that predate the chain: %w", err)
	}
	st, err := loadChain(ctx, tx, chainID)
	if err != nil {
		return err
	}
	mac := key.MAC(auditchain.AnchorSeal, chainID, st.seq, st.head)
	if _, err := tx.ExecContext(ctx, `INSERT INTO chain_seal (id, chain_seq, hash, mac) VALUES (1, ?, ?, ?)`,
		st.seq, st.head.String(), mac.String()); err != nil {
		return fmt.Errorf("seal chain: %w", err)
	}
	return nil
}

// legacySummary encodes legacy's bounds as stored: "table=maxid" joined by
// commas, in auditchain.Tables order.
func legacySummary(l auditchain.Legacy) string {
	parts := make([]string, 0, len(auditchain.Tables))
	for _, t := range auditchain.Tables {
		parts = append(parts, t.Name+"="+strconv.FormatInt(l.MaxID[t.Name], 10))
	}
	return strings.Join(parts, ",")
}

// parseLegacy decodes legacySummary.
func parseLegacy(s string) (auditchain.Legacy, error) {
	l := auditchain.Legacy{IDColumn: legacyIDColumn, MaxID: map[string]int64{}}
	for _, part := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(part, "=")
		id, err := strconv.ParseInt(n, 10, 64)
		if _, known := auditchain.TableByName(name); !ok || err != nil || !known {
			return l, fmt.Errorf("malformed bound of rows that predate the chain: %s", auditchain.Printable(s))
		}
		l.MaxID[name] = id
	}
	return l, nil
}

// writeSeal seals the writer's chain head, in its transaction.
func (s *Store) writeSeal(ctx context.Context, tx dbtx) error {
	mac := s.hasher.MAC(s.key, auditchain.AnchorSeal, s.chainID, s.chain.seq, s.chain.head)
	res, err := s.txExec(ctx, tx, qSeal,
		s.chain.seq, s.chain.head.String(), mac.String())
	if err != nil {
		return fmt.Errorf("seal audit chain: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("seal audit chain: %w: the seal row is gone", ErrChainTampered)
	}
	return nil
}

// checkpointMAC returns the MAC the Store stores with a checkpoint.
func (s *Store) checkpointMAC(seq int64, hash string) (string, error) {
	d, err := auditchain.ParseDigest(hash)
	if err != nil {
		return "", fmt.Errorf("checkpoint at chain_seq %d: %w", seq, err)
	}
	return s.key.MAC(auditchain.AnchorCheckpoint, s.chainID, seq, d).String(), nil
}

// seal is the stored seal of a chain's head.
type seal struct {
	seq  int64
	hash string
	mac  string
}

// readSeal returns the stored seal; ok is false when there is none.
func readSeal(ctx context.Context, q queryer) (sl seal, ok bool, err error) {
	var seq sql.NullInt64
	var hash, mac sql.NullString
	err = q.QueryRowContext(ctx, `SELECT chain_seq, hash, mac FROM chain_seal WHERE id = 1`).Scan(&seq, &hash, &mac)
	if errors.Is(err, sql.ErrNoRows) {
		return sl, false, nil
	}
	if err != nil {
		return sl, false, fmt.Errorf("read chain seal: %w", err)
	}
	return seal{seq: seq.Int64, hash: hash.String, mac: mac.String}, true, nil
}

// valid reports whether sl is key's seal of (seq, head) of chainID.
func (sl seal) valid(key auditchain.Key, chainID string) bool {
	d, err := auditchain.ParseDigest(sl.hash)
	return err == nil && key.CheckMAC(sl.mac, auditchain.AnchorSeal, chainID, sl.seq, d)
}

// checkKeyID fails unless the database was sealed with key.
func checkKeyID(ctx context.Context, q queryer, key auditchain.Key) error {
	var id string
	if err := q.QueryRowContext(ctx, `SELECT value FROM audit_meta WHERE key = ?`, metaKeyID).Scan(&id); err != nil {
		return fmt.Errorf("read key id: %w", err)
	}
	if id != key.ID() {
		return fmt.Errorf("%w: the database was sealed with key %s, this key is %s", ErrKeyMismatch, auditchain.Printable(id), key.ID())
	}
	return nil
}

// checkSealOnOpen fails with ErrChainTampered when the head the Store
// would continue from is not the sealed one: continuing would seal
// whatever was changed behind its back.
func checkSealOnOpen(ctx context.Context, q queryer, key auditchain.Key, chainID string, st chainState) error {
	if err := checkKeyID(ctx, q, key); err != nil {
		return err
	}
	sl, ok, err := readSeal(ctx, q)
	if err != nil {
		return err
	}
	switch {
	case !ok:
		return fmt.Errorf("%w: the seal row is gone; run evoclaw audit verify", ErrChainTampered)
	case !sl.valid(key, chainID):
		return fmt.Errorf("%w: the seal is not authenticated by the key; run evoclaw audit verify", ErrChainTampered)
	case sl.seq != st.seq || sl.hash != st.head.String():
		return fmt.Errorf("%w: the head is chain_seq %d, the seal vouches for chain_seq %d; run evoclaw audit verify", ErrChainTampered, st.seq, sl.seq)
	}
	return nil
}

// openChain prepares the chain of the database behind db for writing: it
// loads the key (creating it for a database not sealed yet), migrates the
// schema, and returns the chain id and the head to continue from, which
// must be the sealed one. keyPredates is set when the database is new
// but its key file was already there.
func openChain(ctx context.Context, db *sql.DB, path, keyFile string, keyPredates *bool, log *slog.Logger) (auditchain.Key, string, chainState, error) {
	if keyFile == "" {
		keyFile = DefaultKeyFile(path)
	}
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return auditchain.Key{}, "", chainState{}, fmt.Errorf("read schema version: %w", err)
	}
	if version > len(migrations) {
		return auditchain.Key{}, "", chainState{}, migrate(ctx, db, auditchain.Key{}, log) // refuses it
	}
	// A sealed database needs its own key; only a database about to be
	// sealed (new, or older than v5) may get a new one.
	if version == 0 {
		_, err := os.Stat(keyFile)
		*keyPredates = err == nil
	}
	key, err := loadOrCreateKey(keyFile, version < sealVersion)
	if err != nil {
		return key, "", chainState{}, err
	}
	if err := migrate(ctx, db, key, log); err != nil {
		return key, "", chainState{}, err
	}
	chainID, err := readChainID(ctx, db)
	if err != nil {
		return key, "", chainState{}, err
	}
	chain, err := loadChain(ctx, db, chainID)
	if err != nil {
		return key, "", chainState{}, err
	}
	if err := checkSealOnOpen(ctx, db, key, chainID, chain); err != nil {
		return key, "", chainState{}, err
	}
	return key, chainID, chain, nil
}

// qSeal is a hot write, prepared once (stmtcache.go).
const qSeal = `UPDATE chain_seal SET chain_seq = ?, hash = ?, mac = ? WHERE id = 1`

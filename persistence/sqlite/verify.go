package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// ErrUnauthenticated reports a chain whose anchors cannot be checked: no
// key was given, or the database predates authenticated anchors (schema
// v5). VerifyOptions.Unkeyed checks the rest anyway.
var ErrUnauthenticated = errors.New("the audit chain's start and head cannot be authenticated")

// VerifyOptions configures VerifyChainWith. The zero value verifies with
// the key beside the database.
type VerifyOptions struct {
	// KeyFile is the key that sealed the database. Empty means
	// DefaultKeyFile of the database path.
	KeyFile string
	// Unkeyed checks only the chain's internal consistency, without the
	// key: the report's KeyID stays empty, and a forger who rewrote the
	// whole chain, moved its start or removed its newest records is not
	// detected.
	Unkeyed bool
}

// VerifyChain is VerifyChainWith with the zero VerifyOptions.
func VerifyChain(ctx context.Context, path string) (*auditchain.Report, error) {
	return VerifyChainWith(ctx, path, VerifyOptions{})
}

// VerifyChainWith checks the audit database at path through a read-only
// connection (so it runs beside a writing Store, and on a read-only copy)
// and in one read transaction (one snapshot). It checks, in order:
//   - the chained tables have exactly the columns of the schema version,
//   - with the key: the database was sealed with it, and every retention
//     checkpoint is authenticated,
//   - every row of a chained table is in the chain after its newest
//     checkpoint (or is one of the rows that predate the chain, as bounded
//     at the upgrade to v5),
//   - the chain_seq numbers run without gap or duplicate and every hash
//     chains, from the newest checkpoint (or genesis) to the head,
//   - with the key: the head is the sealed one.
//
// A failed check is an error wrapping auditchain.ErrBroken (a
// *auditchain.BreakError naming the first bad record); the report says how
// far verification got.
func VerifyChainWith(ctx context.Context, path string, o VerifyOptions) (*auditchain.Report, error) {
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("verify audit chain: %w", err)
	}
	defer closeConn()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("verify audit chain of %s: %w", path, err)
	}
	defer tx.Rollback() // read-only: nothing to commit
	rep, err := verifyTx(ctx, tx, path, o)
	if err != nil {
		return rep, fmt.Errorf("verify audit chain of %s: %w", path, err)
	}
	return rep, nil
}

func verifyTx(ctx context.Context, tx dbtx, path string, o VerifyOptions) (*auditchain.Report, error) {
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case version > len(migrations):
		// A newer schema may hash, chain or anchor differently: what this
		// build would call intact proves nothing about it.
		return nil, fmt.Errorf("%w: database has schema version %d, this build knows up to %d; verify it with that evoclaw or newer", ErrSchemaTooNew, version, len(migrations))
	case version < 3:
		return nil, fmt.Errorf("schema version %d predates the hash chain (v3): nothing to verify", version)
	}
	if err := checkChainedColumns(ctx, tx, version); err != nil {
		return nil, err
	}
	chainID, err := readChainID(ctx, tx)
	if err != nil {
		return nil, err
	}
	var key *auditchain.Key
	if !o.Unkeyed {
		if version < sealVersion {
			return nil, fmt.Errorf("%w: schema version %d predates authenticated anchors (v%d); open it with this evoclaw to upgrade it (which vouches for it as it is), or verify with --unkeyed", ErrUnauthenticated, version, sealVersion)
		}
		kf := o.KeyFile
		if kf == "" {
			kf = DefaultKeyFile(path)
		}
		k, err := ReadKey(kf)
		if err != nil {
			return nil, fmt.Errorf("%w: %w (give the key with --key FILE, or check only consistency with --unkeyed)", ErrUnauthenticated, err)
		}
		if err := checkKeyID(ctx, tx, k); err != nil {
			return nil, err
		}
		key = &k
	}
	startSeq, prev, err := checkCheckpoints(ctx, tx, chainID, key)
	if err != nil {
		return &auditchain.Report{ChainID: chainID}, err
	}
	legacy, err := readLegacy(ctx, tx, version, chainID, key)
	if err != nil {
		return &auditchain.Report{ChainID: chainID}, err
	}
	if err := auditchain.CheckCoverage(ctx, tx, auditchain.Filter{}, startSeq, legacy); err != nil {
		return &auditchain.Report{ChainID: chainID, StartSeq: startSeq, StartHash: prev.String()}, err
	}
	rep, err := auditchain.VerifyRange(ctx, tx, auditchain.Filter{}, chainID, startSeq, prev, 0)
	if err != nil {
		return rep, err
	}
	if rep.Unchained, err = auditchain.CountLegacy(ctx, tx, auditchain.Filter{}, legacy); err != nil {
		return rep, err
	}
	if key != nil {
		if err := checkSeal(ctx, tx, *key, rep); err != nil {
			return rep, err
		}
		rep.KeyID = key.ID()
	}
	return rep, nil
}

// columnSince is the schema version that added each optional hashed
// column (auditchain.Table.Optional).
var columnSince = map[string]int{auditchain.ColAgentElapsedMs: 8}

// chainedColumns returns the columns a chained table has at schema
// version: the row id, the hashed columns the version has and the hash.
// A version that adds one records it in columnSince and as Optional in
// auditchain.
func chainedColumns(version int, t auditchain.Table) []string {
	cols := []string{"id"}
	for _, c := range t.Columns {
		if since, ok := columnSince[c]; !ok || version >= since {
			cols = append(cols, c)
		}
	}
	return append(cols, auditchain.ColHash)
}

// checkChainedColumns fails with a BreakSchema BreakError when a chained
// table is missing, or lacks a column or has one its schema version does
// not know (one added with ALTER TABLE would be shown by queries but never
// covered by a hash).
func checkChainedColumns(ctx context.Context, q queryer, version int) error {
	for _, t := range auditchain.Tables {
		rows, err := q.QueryContext(ctx, `SELECT p.name FROM sqlite_schema m, pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name = ?`, t.Name)
		if err != nil {
			return fmt.Errorf("read columns of %s: %w", t.Name, err)
		}
		var have []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return fmt.Errorf("read columns of %s: %w", t.Name, err)
			}
			have = append(have, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read columns of %s: %w", t.Name, err)
		}
		want := chainedColumns(version, t)
		var problems []string
		if len(have) == 0 {
			problems = append(problems, "is missing or not a table")
		}
		for _, c := range have {
			if !slices.Contains(want, c) {
				problems = append(problems, fmt.Sprintf("has column %s, which schema v%d does not know (added behind evoclaw's back, not covered by the hash)", auditchain.Printable(c), version))
			}
		}
		for _, c := range want {
			if len(have) > 0 && !slices.Contains(have, c) {
				problems = append(problems, fmt.Sprintf("lacks column %s of schema v%d", c, version))
			}
		}
		if len(problems) > 0 {
			if len(problems) > 3 {
				problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
			}
			return &auditchain.BreakError{Kind: auditchain.BreakSchema, Table: t.Name, Detail: strings.Join(problems, "; ")}
		}
	}
	return nil
}

// checkCheckpoints checks every retention checkpoint (with a key: its
// MAC) and returns where the chain in the warm store starts: the newest
// checkpoint, or (0, genesis).
func checkCheckpoints(ctx context.Context, q queryer, chainID string, key *auditchain.Key) (int64, auditchain.Digest, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, chain_seq, typeof(chain_seq), hash, `+macColumn(key)+` FROM chain_checkpoints ORDER BY id`)
	if err != nil {
		return 0, auditchain.Digest{}, fmt.Errorf("read chain checkpoints: %w", err)
	}
	defer rows.Close()
	start, prev := int64(0), auditchain.Genesis(chainID)
	for rows.Next() {
		var (
			id, seq   int64
			typ, hash string
			mac       sql.NullString
		)
		if err := rows.Scan(&id, &seq, &typ, &hash, &mac); err != nil {
			return 0, prev, &auditchain.BreakError{Kind: auditchain.BreakAnchor, Table: "chain_checkpoints",
				Detail: fmt.Sprintf("retention checkpoint (row id %d) is malformed: %v", id, err)}
		}
		d, err := auditchain.ParseDigest(hash)
		if typ != "integer" || seq < 1 || err != nil {
			return 0, prev, &auditchain.BreakError{Kind: auditchain.BreakAnchor, Table: "chain_checkpoints",
				Detail: fmt.Sprintf("retention checkpoint (row id %d) is malformed", id)}
		}
		if key != nil && !key.CheckMAC(mac.String, auditchain.AnchorCheckpoint, chainID, seq, d) {
			return 0, prev, &auditchain.BreakError{Kind: auditchain.BreakAnchor, Table: "chain_checkpoints", Seq: seq,
				Detail: fmt.Sprintf("retention checkpoint at chain_seq %d (row id %d) is not authenticated by the key: forged or edited", seq, id)}
		}
		if seq > start {
			start, prev = seq, d
		}
	}
	if err := rows.Err(); err != nil {
		return 0, prev, fmt.Errorf("read chain checkpoints: %w", err)
	}
	return start, prev, nil
}

// macColumn is the checkpoints' mac column, or NULL for a database from
// before it existed (read unkeyed).
func macColumn(key *auditchain.Key) string {
	if key == nil {
		return "NULL"
	}
	return "mac"
}

// readLegacy returns which rows may lack a chain_seq: before v5 any (they
// cannot be told from forged ones), from v5 those the upgrade bounded,
// authenticated with the key when there is one.
func readLegacy(ctx context.Context, q queryer, version int, chainID string, key *auditchain.Key) (auditchain.Legacy, error) {
	if version < sealVersion {
		return auditchain.Legacy{IDColumn: legacyIDColumn, MaxID: allLegacy()}, nil
	}
	var text, mac string
	err := q.QueryRowContext(ctx, `SELECT (SELECT value FROM audit_meta WHERE key = ?), (SELECT value FROM audit_meta WHERE key = ?)`,
		metaLegacy, metaLegacyMAC).Scan(&text, &mac)
	if err != nil {
		return auditchain.Legacy{}, &auditchain.BreakError{Kind: auditchain.BreakAnchor, Table: "audit_meta",
			Detail: "the bound of the rows that predate the chain is missing"}
	}
	if key != nil {
		want := key.MACText(anchorLegacy, chainID, text)
		if mac != want.String() {
			return auditchain.Legacy{}, &auditchain.BreakError{Kind: auditchain.BreakAnchor, Table: "audit_meta",
				Detail: "the bound of the rows that predate the chain is not authenticated by the key: forged or edited"}
		}
	}
	l, err := parseLegacy(text)
	if err != nil {
		return l, &auditchain.BreakError{Kind: auditchain.BreakAnchor, Table: "audit_meta", Detail: err.Error()}
	}
	return l, nil
}

// allLegacy admits every row without a chain_seq.
func allLegacy() map[string]int64 {
	m := make(map[string]int64, len(auditchain.Tables))
	for _, t := range auditchain.Tables {
		m[t.Name] = 1<<63 - 1
	}
	return m
}

// checkSeal checks that the verified head is the one the key sealed.
func checkSeal(ctx context.Context, q queryer, key auditchain.Key, rep *auditchain.Report) error {
	sl, ok, err := readSeal(ctx, q)
	if err != nil {
		return err
	}
	anchor := func(kind, format string, args ...any) error {
		return &auditchain.BreakError{Kind: kind, Table: "chain_seal", Seq: sl.seq, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case !ok:
		return anchor(auditchain.BreakAnchor, "the seal of the chain's head is missing")
	case !sl.valid(key, rep.ChainID):
		return anchor(auditchain.BreakAnchor, "the seal of the chain's head is not authenticated by the key: forged or edited")
	case sl.seq > rep.HeadSeq:
		return anchor(auditchain.BreakTruncated, "the newest records, chain_seq %d..%d, are missing (deleted): the seal vouches for a head at chain_seq %d", rep.HeadSeq+1, sl.seq, sl.seq)
	case sl.seq < rep.HeadSeq:
		return unsealed(ctx, q, sl.seq, rep.HeadSeq)
	case sl.hash != rep.HeadHash:
		return anchor(auditchain.BreakEdited, "the head, chain_seq %d, is not the record the seal vouches for: the chain was rewritten", sl.seq)
	}
	return nil
}

// unsealed names the first record after the sealed head.
func unsealed(ctx context.Context, q queryer, sealSeq, head int64) error {
	recs, err := auditchain.ReadWindow(ctx, q, auditchain.Filter{}, sealSeq, sealSeq+1)
	if err != nil {
		return err
	}
	be := &auditchain.BreakError{Kind: auditchain.BreakUnsealed, Seq: sealSeq + 1,
		Detail: fmt.Sprintf("records chain_seq %d..%d come after the sealed head (chain_seq %d): written behind the node's back", sealSeq+1, head, sealSeq)}
	if len(recs) > 0 {
		be.Table, be.RecordID = recs[0].Table, recs[0].RecordID
	}
	return be
}

// newestCheckpoint returns where the chain in the warm store starts: the
// newest retention checkpoint, or (0, genesis). It trusts the database;
// VerifyChainWith uses checkCheckpoints instead.
func newestCheckpoint(ctx context.Context, q queryer, chainID string) (int64, auditchain.Digest, error) {
	var (
		seq  int64
		hash string
	)
	err := q.QueryRowContext(ctx, `SELECT chain_seq, hash FROM chain_checkpoints ORDER BY chain_seq DESC LIMIT 1`).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, auditchain.Genesis(chainID), nil
	}
	if err != nil {
		return 0, auditchain.Digest{}, fmt.Errorf("read chain checkpoint: %w", err)
	}
	d, err := auditchain.ParseDigest(hash)
	if err != nil {
		return 0, d, fmt.Errorf("chain checkpoint at chain_seq %d: %w", seq, err)
	}
	return seq, d, nil
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
)

// WarmStatus describes an audit database at rest: what `evoclaw audit
// status` prints, readable while a node writes the file.
type WarmStatus struct {
	SchemaVersion int
	ChainID       string
	HeadSeq       int64     // the chain's head: newest chain_seq, or the last deleted when retention deleted every record
	ChainStart    int64     // records up to this chain_seq were deleted by retention
	Records       int64     // chained records held
	Oldest        time.Time // time of the oldest record held; zero when none
	ShippedSeq    int64     // the cold tier holds every record up to this chain_seq
	Checkpoints   int64     // retention passes that deleted records
	LastPrune     time.Time // when the newest checkpoint was written; zero when none
	UsedBytes     int64     // bytes of the database's pages in use
}

// Lag returns how many records wait to be shipped to the cold tier.
func (w WarmStatus) Lag() int64 { return max(w.HeadSeq-max(w.ShippedSeq, w.ChainStart), 0) }

// ReadStatus reads the status of the audit database at path through a
// read-only connection.
func ReadStatus(ctx context.Context, path string) (*WarmStatus, error) {
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("read audit status: %w", err)
	}
	defer closeConn()
	st := &WarmStatus{}
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&st.SchemaVersion); err != nil {
		return nil, fmt.Errorf("read audit status: %w", err)
	}
	if st.ChainID, err = readChainID(ctx, conn); err != nil {
		return nil, fmt.Errorf("read audit status: %w", err)
	}
	if st.HeadSeq, err = auditchain.MaxSeq(ctx, conn, auditchain.Filter{}); err != nil {
		return nil, fmt.Errorf("read audit status: %w", err)
	}
	if st.ShippedSeq, err = shippedSeq(ctx, conn); err != nil {
		return nil, fmt.Errorf("read audit status: %w", err)
	}
	var lastTS sql.NullString
	err = conn.QueryRowContext(ctx, `SELECT count(*), coalesce(max(chain_seq), 0), max(ts) FROM chain_checkpoints`).Scan(&st.Checkpoints, &st.ChainStart, &lastTS)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read audit status: %w", err)
	}
	if lastTS.Valid {
		st.LastPrune, _ = time.Parse(time.RFC3339Nano, lastTS.String)
	}
	// With every record deleted, the head is the last one deleted.
	st.HeadSeq = max(st.HeadSeq, st.ChainStart)
	counts := make([]string, 0, len(auditchain.Tables))
	oldest := make([]string, 0, len(auditchain.Tables))
	for _, t := range auditchain.Tables {
		counts = append(counts, fmt.Sprintf("(SELECT count(*) FROM %s)", t.Name))
		oldest = append(oldest, fmt.Sprintf("SELECT min(ts) AS m FROM %s", t.Name))
	}
	var minTS sql.NullString
	q := "SELECT " + strings.Join(counts, " + ") + ", (SELECT min(m) FROM (" + strings.Join(oldest, " UNION ALL ") + "))"
	if err := conn.QueryRowContext(ctx, q).Scan(&st.Records, &minTS); err != nil {
		return nil, fmt.Errorf("read audit status: %w", err)
	}
	if minTS.Valid {
		st.Oldest, _ = time.Parse(time.RFC3339Nano, minTS.String)
	}
	if st.UsedBytes, err = usedBytes(ctx, conn); err != nil {
		return nil, fmt.Errorf("read audit status: %w", err)
	}
	return st, nil
}

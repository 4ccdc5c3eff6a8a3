package cold

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// rewriteCold edits the cold copy of record seq of chainID and recomputes
// the hash of every record from it to the newest, as an insider with
// write access to the cold database and the (public) hash function would.
// The chains row is left as the shipper wrote it.
func rewriteCold(t *testing.T, c *Store, chainID string, seq int64) {
	t.Helper()
	ctx := context.Background()
	f := auditchain.Filter{Cond: "chain_id = ?", Args: []any{chainID}}
	top, err := auditchain.MaxSeq(ctx, c.db, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if _, err := c.db.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET ts = '2000-01-01T00:00:00.000000000Z' WHERE chain_id = ? AND chain_seq = ?", tb), chainID, seq); err != nil {
			t.Fatal(err)
		}
	}
	before, err := auditchain.ReadWindow(ctx, c.db, f, seq-2, seq-1)
	if err != nil || len(before) != 1 {
		t.Fatalf("read record %d: %v (%d records)", seq-1, err, len(before))
	}
	prev, err := auditchain.ParseDigest(before[0].Hash)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := auditchain.ReadWindow(ctx, c.db, f, seq-1, top)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		h, err := auditchain.Hash(prev, r.Table, r.Values)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.db.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET hash = ? WHERE chain_id = ? AND chain_seq = ?", r.Table), h.String(), chainID, r.Seq); err != nil {
			t.Fatal(err)
		}
		prev = h
	}
}

// Cold records rewritten with every hash recomputed verify among
// themselves; the chains row still names the head the node shipped, so
// the cold tier's own verification and its join with warm both fail,
// the join naming the first record that differs.
func TestColdRecordsRewrittenUnderChainsRow(t *testing.T) {
	t.Parallel()
	_, warm, path, c := tiers(t)
	fill(t, warm, 8) // 40 records
	shipAll(t, warm, c)
	ctx := context.Background()
	st, ok, err := c.Chain(ctx, warm.ChainID())
	if err != nil || !ok {
		t.Fatalf("cold chain state: %v %v", ok, err)
	}
	const edited = 17
	rewriteCold(t, c, warm.ChainID(), edited)

	if _, err := c.VerifyChain(ctx, st); !errors.Is(err, ErrHeadRewritten) {
		t.Fatalf("cold verify of rewritten records: %v, want %v", err, ErrHeadRewritten)
	}
	warmRep, err := sqlite.VerifyChain(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	warmHash := func(ctx context.Context, seq int64) (string, bool, error) {
		recs, err := warm.ReadChain(ctx, seq-1, seq)
		if err != nil || len(recs) == 0 || recs[0].Seq != seq {
			return "", false, err
		}
		return recs[0].Hash, true, nil
	}
	coldHash := func(ctx context.Context, seq int64) (string, bool, error) { return c.RecordHash(ctx, st.ChainID, seq) }
	err = VerifyJoin(ctx, warmRep, st, warmHash, coldHash)
	if !errors.Is(err, ErrTiersDisagree) || !strings.Contains(err.Error(), fmt.Sprintf("first record that differs is chain_seq %d", edited)) {
		t.Fatalf("join of rewritten cold records: %v", err)
	}
}

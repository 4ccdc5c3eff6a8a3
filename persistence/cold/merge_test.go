package cold

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Records only in cold (pruned from warm), in both, and only in warm
// (not shipped yet) appear exactly once in the merged database, and the
// chain verifies across the tiers.
func TestMergeTiers(t *testing.T) {
	t.Parallel()
	_, warm, path, c := tiers(t)
	fill(t, warm, 10) // 50 records
	shipAll(t, warm, c)
	// Prune the first 20 from warm (they are shipped), then write 10 more
	// that stay warm only.
	res, err := warm.Prune(context.Background(), sqlite.Retention{ColdTier: true, Batch: 20}, time.Now().Add(30*24*time.Hour))
	if err != nil || res.UpToSeq != 20 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	fill(t, warm, 2)

	dst, err := MergeTiers(context.Background(), path, c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int64{"tool_calls": 12, "llm_calls": 12, "messages": 24, "events": 12} {
		res, err := sqlite.QueryReadOnly(context.Background(), dst, "SELECT count(*), count(DISTINCT record_id), count(DISTINCT chain_seq) FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		if r := res.Rows[0]; r[0] != want || r[1] != want || r[2] != want {
			t.Errorf("%s: count, distinct ids, distinct seqs = %v, want %d each", table, r, want)
		}
	}
	if v, err := sqlite.QueryReadOnly(context.Background(), dst, "SELECT message_count FROM conversations WHERE conversation_id = 'c1'"); err != nil || v.Rows[0][0] != int64(24) {
		t.Fatalf("conversation summary: %v %v", v, err)
	}
	// The merged database holds the node's whole chain from genesis.
	db, err := sql.Open("sqlite", dst)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := auditchain.Filter{Cond: "chain_id = ?", Args: []any{warm.ChainID()}}
	rep, err := auditchain.VerifyRange(context.Background(), db, f, warm.ChainID(), 0, auditchain.Genesis(warm.ChainID()), 7)
	if err != nil || rep.Verified != 60 {
		t.Fatalf("merged chain: %+v %v", rep, err)
	}
}

// TestMergeKeepsAContinuedConversation: a conversation whose messages were
// shipped and pruned from warm starts again at Seq 1 when it continues;
// the merged view holds its messages of both eras. Before, the merged
// database kept the warm schema's UNIQUE(conversation_id, seq) and its
// INSERT OR IGNORE dropped the cold message that shared a Seq.
func TestMergeKeepsAContinuedConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, warm, path, c := tiers(t)
	say := func(text string) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"role": "user", "content": text})
		if err := warm.AppendMessages(ctx, "kitchen", []persistence.Message{{Role: "user", Body: body}}); err != nil {
			t.Fatal(err)
		}
	}
	say("first")
	say("second")
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipping")
	sh.Close()
	if res, err := warm.Prune(ctx, sqlite.Retention{ColdTier: true}, time.Now().Add(30*24*time.Hour)); err != nil || res.Deleted != 2 {
		t.Fatalf("prune: %+v %v", res, err)
	}
	say("third")
	dst, err := MergeTiers(ctx, path, c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := sqlite.QueryReadOnly(ctx, dst, `SELECT group_concat(json_extract(body, '$.content') || ':' || seq, ',')
		FROM (SELECT body, seq FROM messages WHERE conversation_id = 'kitchen' ORDER BY chain_seq)`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Rows[0][0], "first:1,second:2,third:1"; got != want {
		t.Fatalf("merged messages of kitchen: %v, want %s", got, want)
	}
}

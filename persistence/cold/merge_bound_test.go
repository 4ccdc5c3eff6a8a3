package cold

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestMergeTiersPagesUnderTheAnswerBound: records too large for a full
// page within max_answer_bytes are fetched in smaller pages, every one
// of them reaching the merged view.
func TestMergeTiersPagesUnderTheAnswerBound(t *testing.T) {
	srv, warm, path, c := tiers(t)
	ctx := context.Background()
	const msgs = 60
	for i := range msgs {
		body := fmt.Sprintf(`{"role":"user","content":%q}`, fmt.Sprint(i)+strings.Repeat("x", 16<<10))
		if err := warm.AppendMessages(ctx, "big", []persistence.Message{{Role: "user", Body: []byte(body)}}); err != nil {
			t.Fatal(err)
		}
	}
	shipAll(t, warm, c)
	small, err := Open(Config{URL: srv.URL(), MaxAnswerBytes: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if _, err := warm.Prune(ctx, sqlite.Retention{ColdTier: true, Batch: 1000}, time.Now().Add(30*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	dst, err := MergeTiers(ctx, path, small, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := sqlite.QueryReadOnly(ctx, dst, "SELECT count(*) FROM messages WHERE conversation_id = 'big'")
	if err != nil || res.Rows[0][0] != int64(msgs) {
		t.Fatalf("merged messages: %v %v, want %d", res, err, msgs)
	}
}

package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

func TestRecentPreviews(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	big := `{"role":"user","content":"` + strings.Repeat("a", 1<<20) + `"}`
	msgs := []persistence.Message{
		{Role: "user", Body: []byte(`{"role":"user","content":"one"}`)},
		{Role: "user", Body: []byte(big)},
		{Role: "assistant", Body: []byte(`{"role":"assistant","content":"three","tool_calls":[{"id":"c","name":"t","arguments":{"a":1}}]}`)},
		{Role: "tool", Body: []byte(`{"role":"tool","name":"t","is_error":true,"content":"` + strings.Repeat("€", 1<<18) + `"}`)},
	}
	if err := s.AppendMessages(ctx, "c", msgs); err != nil {
		t.Fatal(err)
	}
	seqs := func(ps []MessagePreview) string {
		var b strings.Builder
		for _, p := range ps {
			fmt.Fprintf(&b, "%d%s ", p.Seq, map[bool]string{true: "w", false: "p"}[p.Body != nil])
		}
		return b.String()
	}
	for _, tc := range []struct {
		limit, whole int
		want         string
	}{
		{1, 1024, "4p "}, {3, 1024, "2p 3w 4p "}, {4, 1024, "1w 2p 3w 4p "}, {500, 1024, "1w 2p 3w 4p "},
		{500, 0, "1p 2p 3p 4p "}, {500, 2 << 20, "1w 2w 3w 4w "},
	} {
		ps, err := s.RecentPreviews(ctx, "c", tc.limit, tc.whole, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(ps); got != tc.want {
			t.Errorf("limit %d whole %d: %s, want %s", tc.limit, tc.whole, got, tc.want)
		}
	}
	ps, err := s.RecentPreviews(ctx, "c", 4, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if p.Size != int64(len(msgs[i].Body)) || p.Role != msgs[i].Role || !p.Decoded || p.Time != msgs[i].Time {
			t.Errorf("preview %d: %+v", i, p)
		}
	}
	if ps[1].Content != "aaaaaaaaaa" || ps[2].Content != "three" || len(ps[2].ToolCalls) != 1 ||
		ps[2].ToolCalls[0] != (CallPreview{Name: "t", Arguments: `{"a":1}`}) {
		t.Errorf("previews %+v", ps[:3])
	}
	// 10 bytes of three-byte runes: the caller cuts the last, partial one.
	if p := ps[3]; p.Content != strings.Repeat("€", 4)[:10] || p.Name != "t" || !p.IsError {
		t.Errorf("tool preview %+v", p)
	}
	if ps, err := s.RecentPreviews(ctx, "nobody", 10, 0, 10); err != nil || ps == nil || len(ps) != 0 {
		t.Errorf("unknown conversation: %v, %v", ps, err)
	}
	if _, err := s.RecentPreviews(ctx, "c", 0, 0, 10); err == nil {
		t.Error("limit 0 accepted")
	}
}

// TestRecentPreviewsAfterRetention: the newest limit messages are the
// newest stored, whatever Seqs retention removed before them.
func TestRecentPreviewsAfterRetention(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	for i := range 6 {
		if err := s.AppendMessages(ctx, "c", []persistence.Message{{Role: "user", Body: []byte(fmt.Sprintf(`{"content":"%d"}`, i+1))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.submit(ctx, func(ctx context.Context, tx dbtx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE conversation_id = 'c' AND seq IN (1, 2, 4)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for limit, want := range map[int]string{1: "[6]", 2: "[5 6]", 3: "[3 5 6]", 4: "[3 5 6]"} {
		ps, err := s.RecentPreviews(ctx, "c", limit, 1024, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, p := range ps {
			got = append(got, p.Seq)
		}
		if fmt.Sprint(got) != want {
			t.Errorf("limit %d: %v, want %s", limit, got, want)
		}
	}
}

// TestRecentPreviewsPlan: the list walks the conversation's index in Seq
// order, without a sorter (which would hold the bodies it carries).
func TestRecentPreviewsPlan(t *testing.T) {
	s, _ := openStore(t, Options{})
	plan := queryPlan(t, s.rdb, qRecentPreviews, "c", 10, 1024)
	t.Log(plan)
	if p := strings.Join(plan, "; "); strings.Contains(p, "TEMP B-TREE") || strings.Contains(p, "SCAN messages") {
		t.Errorf("plan %s", p)
	}
}

// TestRecentPreviewsOfLargeBodiesAllocateLittle: ten bodies of 4 MiB,
// previewed 16 KiB each, cost Go about ten times 16 KiB; RecentMessages
// costs their 40 MiB (at least).
func TestRecentPreviewsOfLargeBodiesAllocateLittle(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	msgs := make([]persistence.Message, 10)
	for i := range msgs {
		msgs[i] = persistence.Message{Role: "user", Body: []byte(`{"role":"user","content":"` + strings.Repeat("a", 4<<20) + `"}`)}
	}
	if err := s.AppendMessages(ctx, "big", msgs); err != nil {
		t.Fatal(err)
	}
	measure := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var ps []MessagePreview
	alloc := measure(func() {
		var err error
		if ps, err = s.RecentPreviews(ctx, "big", 500, 16<<10, 16<<10+1); err != nil {
			t.Fatal(err)
		}
	})
	whole := measure(func() {
		if _, err := s.RecentMessages(ctx, "big", 500); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("RecentPreviews allocated %d bytes, RecentMessages %d", alloc, whole)
	if len(ps) != 10 || len(ps[9].Content) != 16<<10+1 {
		t.Fatalf("%d previews", len(ps))
	}
	if alloc > 2<<20 {
		t.Errorf("RecentPreviews allocated %d bytes for 10 previews of 16 KiB", alloc)
	}
}

package sqlite

import (
	"context"
	"testing"
	"time"
)

func TestReadStatus(t *testing.T) {
	t.Parallel()
	s, path := openStore(t, Options{})
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	writeAged(t, s, now.Add(-72*time.Hour), now.Add(-48*time.Hour), now.Add(-time.Hour), now)
	if err := s.MarkShipped(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(context.Background(), Retention{ColdTier: true, WarmWindow: 24 * time.Hour}, now); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if st.SchemaVersion != len(migrations) || st.ChainID != s.ChainID() || st.HeadSeq != 4 || st.ChainStart != 2 ||
		st.Records != 2 || st.ShippedSeq != 3 || st.Lag() != 1 || st.Checkpoints != 1 || !st.LastPrune.Equal(now) ||
		!st.Oldest.Equal(now.Add(-time.Hour)) || st.UsedBytes <= 0 {
		t.Fatalf("status %+v (lag %d)", st, st.Lag())
	}
}

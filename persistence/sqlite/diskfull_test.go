package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/evoclaw/evoclaw/persistence"
)

// TestDiskFull fills a real, tiny tmpfs with audit records: the write that
// does not fit fails with ErrDiskFull, every acknowledged record is there,
// the database is not corrupt, and once space returns (the tmpfs grows)
// writes succeed again and the chain verifies. It needs root to mount.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root to mount a small tmpfs; the ENOSPC path is also covered through the commit seam (TestCommitFailureThenRecovery)")
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("SKIP: cannot mount a tmpfs here (%v); the ENOSPC path is also covered through the commit seam", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	path := filepath.Join(dir, "audit.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var acked []string
	var fullErr error
	for i := 0; i < 100000; i++ {
		c := sampleCall(i)
		c.ResultExcerpt = strings.Repeat("x", 3000)
		if err := s.RecordToolCall(ctx, c); err != nil {
			fullErr = err
			break
		}
		acked = append(acked, c.RecordID)
	}
	if !errors.Is(fullErr, ErrDiskFull) {
		t.Fatalf("after %d records: got %v, want ErrDiskFull", len(acked), fullErr)
	}
	t.Logf("disk full after %d records: %v", len(acked), fullErr)
	// Still full: a message append fails the same way and stores nothing.
	if err := s.AppendMessages(ctx, "c", []persistence.Message{msg("user", strings.Repeat("y", 200000))}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append on a full disk: %v", err)
	}

	// Space returns.
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=16m"); err != nil {
		t.Fatalf("grow tmpfs: %v", err)
	}
	for i := range 10 {
		if err := s.RecordToolCall(ctx, sampleCall(1_000_000+i)); err != nil {
			t.Fatalf("write after space returned: %v", err)
		}
	}
	if err := s.AppendMessages(ctx, "c", []persistence.Message{msg("user", "after")}); err != nil {
		t.Fatalf("append after space returned: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ok := queryOne(t, path, "PRAGMA integrity_check"); ok != "ok" {
		t.Fatalf("integrity_check: %v", ok)
	}
	for _, id := range acked {
		if n := queryOne(t, path, "SELECT count(*) FROM tool_calls WHERE record_id = ?", id); n != int64(1) {
			t.Fatalf("acknowledged record %s lost", id)
		}
	}
	rep, err := VerifyChain(ctx, path)
	if err != nil {
		t.Fatalf("chain after disk full: %v", err)
	}
	if want := int64(len(acked) + 10 + 1); rep.Verified != want {
		t.Fatalf("chain has %d records, want %d", rep.Verified, want)
	}
	if seq := queryOne(t, path, "SELECT seq FROM messages WHERE conversation_id = 'c'"); seq != int64(1) {
		t.Fatalf("message after recovery has seq %v, want 1 (the failed append used none)", seq)
	}
	// Writes that failed on the full disk left no summary change behind.
	if err := VerifySummaries(ctx, path); err != nil {
		t.Fatalf("report summaries after disk full: %v", err)
	}
}

package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/persistence"
)

// Environment of the TestHelperWriter child process.
const (
	helperDBEnv   = "EVOCLAW_AUDIT_HELPER_DB"
	helperSyncEnv = "EVOCLAW_AUDIT_HELPER_SYNC"
)

// TestHelperWriter is not a test: TestCrashKeepsAcknowledgedRecords runs the
// test binary again with only this function selected. As that child it
// writes records from several goroutines, forever, and prints each RecordID
// once RecordToolCall has acknowledged it.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv(helperDBEnv)
	if path == "" {
		t.Skip("helper process for TestCrashKeepsAcknowledgedRecords")
	}
	s, err := Open(path, Options{Sync: os.Getenv(helperSyncEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				c := sampleCall(w*1_000_000 + i)
				c.ResultExcerpt = strings.Repeat("r", 2000) // grow the WAL past an automatic checkpoint
				if err := s.RecordToolCall(context.Background(), c); err != nil {
					fmt.Fprintln(os.Stderr, "helper:", err)
					os.Exit(3)
				}
				// One write per line, so lines from different
				// goroutines never interleave on the pipe.
				fmt.Fprintln(os.Stdout, c.RecordID)
			}
		})
	}
	wg.Wait() // never returns; the parent kills the process
}

func TestCrashKeepsAcknowledgedRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	t.Parallel()
	for _, syncMode := range []string{SyncNormal, SyncFull} {
		t.Run("sync="+syncMode, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "audit.db")
			acked := runAndKillWriter(t, path, syncMode, 2000)

			// The killed writer left a hot WAL behind; the next Open
			// recovers it.
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatalf("reopen after SIGKILL: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if ok := queryOne(t, path, "PRAGMA integrity_check"); ok != "ok" {
				t.Fatalf("integrity_check: %v", ok)
			}
			res, err := QueryReadOnly(context.Background(), path, "SELECT record_id FROM tool_calls")
			if err != nil {
				t.Fatal(err)
			}
			stored := make(map[string]bool, len(res.Rows))
			for _, r := range res.Rows {
				stored[r[0].(string)] = true
			}
			missing := 0
			for _, id := range acked {
				if !stored[id] {
					missing++
				}
			}
			if missing > 0 {
				t.Fatalf("%d of %d acknowledged records are missing after SIGKILL", missing, len(acked))
			}
			t.Logf("%d acknowledged, %d stored", len(acked), len(stored))
		})
	}
}

// runAndKillWriter starts TestHelperWriter on path, SIGKILLs it once it has
// acknowledged at least n records and returns every id it acknowledged.
func runAndKillWriter(t *testing.T, path, syncMode string, n int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperDBEnv+"="+path, helperSyncEnv+"="+syncMode)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	readDone := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		readDone <- sc.Err()
	}()

	var acked []string
	killed := false
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	for lines != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				break
			}
			if len(line) == persistence.RecordIDLen {
				acked = append(acked, line)
			}
			if len(acked) >= n && !killed {
				// Process.Kill sends SIGKILL: no deferred code, no Close.
				if err := cmd.Process.Kill(); err != nil {
					t.Fatalf("kill writer: %v", err)
				}
				killed = true
			}
		case <-timeout.C:
			cmd.Process.Kill()
			t.Fatalf("writer acknowledged %d records in 60s, want %d; stderr:\n%s", len(acked), n, stderr.String())
		}
	}
	if err := <-readDone; err != nil {
		t.Fatalf("read writer output: %v", err)
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("writer exited by itself (%v) after %d records; stderr:\n%s", err, len(acked), stderr.String())
	}
	return acked
}

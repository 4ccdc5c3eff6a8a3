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
// writes records of every kind from several goroutines, forever, and prints
// each one once its write has been acknowledged: "t ID" (tool call), "l ID"
// (LLM call), "e ID" (event), "m CONV SEQ" (message).
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
			ctx := context.Background()
			conv := fmt.Sprintf("conv-%d", w)
			for i := 0; ; i++ {
				var (
					line string
					err  error
				)
				switch i % 4 {
				case 0:
					c := sampleCall(w*1_000_000 + i)
					c.ResultExcerpt = strings.Repeat("r", 2000) // grow the WAL past an automatic checkpoint
					err, line = s.RecordToolCall(ctx, c), "t "+c.RecordID
				case 1:
					c := sampleLLMCall(i)
					err, line = s.RecordLLMCall(ctx, c), "l "+c.RecordID
				case 2:
					e := persistence.Event{RecordID: persistence.NewRecordID(), Node: "n", Kind: persistence.EventAgentOnline}
					err, line = s.RecordEvent(ctx, e), "e "+e.RecordID
				case 3:
					m := []persistence.Message{msg("user", strings.Repeat("m", 500))}
					if err = s.AppendMessages(ctx, conv, m); err == nil {
						line = fmt.Sprintf("m %s %d", conv, m[0].Seq)
					}
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "helper:", err)
					os.Exit(3)
				}
				// One write per line, so lines from different
				// goroutines never interleave on the pipe.
				fmt.Fprintln(os.Stdout, line)
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
			res, err := QueryReadOnly(context.Background(), path, `SELECT 't ' || record_id FROM tool_calls
				UNION ALL SELECT 'l ' || record_id FROM llm_calls
				UNION ALL SELECT 'e ' || record_id FROM events
				UNION ALL SELECT 'm ' || conversation_id || ' ' || seq FROM messages`)
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
			// The hash chain survived the kill, and the conversations'
			// message numbers have no holes.
			rep, err := VerifyChain(context.Background(), path)
			if err != nil {
				t.Fatalf("chain after SIGKILL: %v", err)
			}
			if rep.Verified != int64(len(stored)) {
				t.Fatalf("chain verified %d records, %d stored", rep.Verified, len(stored))
			}
			if holes := queryOne(t, path, `SELECT count(*) FROM conversations c
				WHERE message_count != (SELECT count(*) FROM messages m WHERE m.conversation_id = c.conversation_id)`); holes != int64(0) {
				t.Fatalf("%v conversations whose message count disagrees with their messages", holes)
			}
			// The report summaries committed with their records.
			if err := VerifySummaries(context.Background(), path); err != nil {
				t.Fatalf("report summaries after SIGKILL: %v", err)
			}
			t.Logf("%d acknowledged, %d stored, chain and report summaries verified", len(acked), len(stored))
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
			if len(line) > 2 && line[1] == ' ' {
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

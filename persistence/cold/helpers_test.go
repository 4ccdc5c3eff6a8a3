package cold

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/cold/sqldtest"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// openWarm opens a warm store in a fresh directory, closed at cleanup.
func openWarm(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// openCold opens a cold Store for url with fast retry settings.
func openCold(t testing.TB, url, token string) *Store {
	t.Helper()
	c, err := Open(Config{URL: url, AuthToken: token, BatchSize: 50, PollInterval: 20 * time.Millisecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// tiers starts a sqld server for the cold tier and opens a warm store and
// a cold Store on that server (openWarm, openCold): the setup of most tests.
func tiers(t testing.TB) (srv *sqldtest.Server, warm *sqlite.Store, path string, c *Store) {
	t.Helper()
	srv = sqldtest.Start(t, sqldtest.Options{})
	warm, path = openWarm(t)
	return srv, warm, path, openCold(t, srv.URL(), "")
}

// fill writes n rounds of one record of each chained kind: 5n records.
func fill(t testing.TB, s *sqlite.Store, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		c := persistence.ToolCall{Node: "n1", Side: persistence.SideEdge, AgentID: "edge-1", ConversationID: "c1",
			Tool: "shell", Params: []byte(fmt.Sprintf(`{"i":%d}`, i)), Status: persistence.StatusSuccess, ElapsedMs: int64(i)}
		if i%3 == 2 {
			c.Status, c.ErrorType, c.Error = persistence.StatusError, "timeout", "took too long"
		}
		if err := s.RecordToolCall(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordLLMCall(ctx, persistence.LLMCall{Node: "n1", ConversationID: "c1", Provider: "scripted",
			InputTokens: 10, OutputTokens: 2, Status: persistence.StatusSuccess, Iteration: i}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendMessages(ctx, "c1", []persistence.Message{
			{Role: "user", Body: []byte(`{"role":"user","content":"hi"}`)},
			{Role: "assistant", Body: []byte(`{"role":"assistant","content":"hello"}`)},
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordEvent(ctx, persistence.Event{Node: "n1", AgentID: "edge-1", Kind: persistence.EventAgentOnline}); err != nil {
			t.Fatal(err)
		}
	}
}

// coldCount returns the rows of table in the cold tier.
func coldCount(t testing.TB, c *Store, table string) int64 {
	t.Helper()
	_, rows, err := c.Query(context.Background(), "SELECT count(*) FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	return rows[0][0].(int64)
}

// warmCount returns the rows of table in the warm database at path.
func warmCount(t testing.TB, path, table string) int64 {
	t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), path, "SELECT count(*) FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	return res.Rows[0][0].(int64)
}

// startShipper starts a shipper from warm to c, closed at cleanup.
func startShipper(t testing.TB, warm *sqlite.Store, c *Store) *Shipper {
	t.Helper()
	// The shipper's warnings go to the test's output: a failing test shows
	// what the shipper saw.
	sh := NewShipper(warm, c, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err := sh.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	// Runs before the Close above: a failed test shows the shipper's
	// status and where its goroutine is, so a shipper stuck in a step
	// (not failing, which its log shows) says where it waits.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var stacks []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "cold.(*Shipper)") {
				stacks = append(stacks, g)
			}
		}
		t.Logf("shipper status: %+v\nshipper goroutines:\n%s", sh.Status(), strings.Join(stacks, "\n\n"))
	})
	return sh
}

// caughtUp reports whether sh has shipped every record of warm.
func caughtUp(t testing.TB, sh *Shipper, warm *sqlite.Store) func() bool {
	return func() bool {
		sh.Kick()
		head, err := warm.HeadSeq(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		shipped, err := warm.ShippedSeq(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return head > 0 && shipped == head
	}
}

// shipAll ships every record of warm to c and stops the shipper.
func shipAll(t testing.TB, warm *sqlite.Store, c *Store) {
	t.Helper()
	sh := startShipper(t, warm, c)
	testenv.Eventually(t, 60*time.Second, caughtUp(t, sh, warm), "shipping")
	sh.Close()
}

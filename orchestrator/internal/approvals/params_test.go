package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// TestApprovalShowsWhatRuns: a person is shown a call's arguments whole,
// or is not asked. The gate used to keep 4 KiB of them: a model that
// padded its arguments put what mattered (here a command's tail) where
// the person deciding never saw it.
func TestApprovalShowsWhatRuns(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	g, err := New(Config{Timeout: llm.Duration{Duration: time.Minute}, Rules: []Rule{{Tools: []string{"*"}}}},
		Options{Store: db, Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	args := func(n int) []byte {
		b, err := json.Marshal(map[string]string{"command": strings.Repeat(" ", n) + "echo ok; rm -rf /srv/backups"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tt := range []struct {
		name string
		args []byte
		ask  bool
	}{
		{"short", args(10), true},
		{"past the old 4 KiB cut", args(8 << 10), true},
		{"at the bound", args(MaxParamsBytes - len(args(0))), true},
		{"one byte past it", args(MaxParamsBytes - len(args(0)) + 1), false},
		{"far past it", args(1 << 20), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pending := make(chan string, 1)
			done := make(chan actors.ApprovalDecision, 1)
			go func() {
				done <- g.Await(ctx, actors.ApprovalRequest{ConversationID: "c", RequestID: "r-" + tt.name, Tool: "bash", Name: "bash",
					Args: tt.args}, func(id string) { pending <- id })
			}()
			if !tt.ask {
				d := <-done
				if !errors.Is(d.Err, ErrParamsTooLong) || d.Approved || d.ID != "" {
					t.Fatalf("%d bytes of arguments: decision %+v, want refused without asking (ErrParamsTooLong)", len(tt.args), d)
				}
				return
			}
			var id string
			select {
			case id = <-pending:
			case d := <-done:
				t.Fatalf("%d bytes of arguments: decided %+v without asking", len(tt.args), d)
			}
			a, err := db.Approval(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if a.Params != string(tt.args) {
				t.Fatalf("%d bytes of arguments: the approval holds %d bytes ending %q", len(tt.args), len(a.Params), a.Params[max(0, len(a.Params)-40):])
			}
			if _, err := g.Decide(ctx, id, false, "alice", ""); err != nil {
				t.Fatal(err)
			}
			if d := <-done; d.Approved || d.State != persistence.ApprovalDenied {
				t.Fatalf("decision %+v, want denied", d)
			}
		})
	}
}

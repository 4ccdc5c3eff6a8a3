package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestAbandonedLocalRunAudited: a chat's client leaves while the node's
// own tool runs (found by the crash campaign, fault client-leave). The run
// is cut, and it must be audited at once, ending its request-log entry,
// as every run of the node's tools is. Before, the cut run's result went
// to a stopped actor: no tool_calls row, and the request log said running
// until the node's next start, which then audited it as cut by a crash.
func TestAbandonedLocalRunAudited(t *testing.T) {
	c := newCampaign(t, time.Now().UnixNano())
	ctx := t.Context()
	c.startNode(ctx)
	db := filepath.Join(c.nodeData, "audit.db")
	// Twice, so that the first cut does not keep the conversation from
	// running its next tool.
	for i := range 2 {
		ch := c.newChat(1, "client-leave", fmt.Sprintf("leave-%d", i), c.convs[0], false)
		ch.order = c.order(ch, 5)
		cctx, leave := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.chat(cctx, ch)
		}()
		testenv.Eventually(t, 20*time.Second, func() bool {
			runs, err := runCounts(c.runLog)
			return err == nil && runs[ch.tag] == 1
		}, ch.tag+" running on the node")
		leave()
		<-done
		if ch.ans.Status != 0 {
			t.Fatalf("%s: answered %d after its client left", ch.tag, ch.ans.Status)
		}
		var rows []tagRow
		testenv.Eventually(t, 10*time.Second, func() bool {
			var err error
			rows, err = tagRows(ctx, db, ch.tag)
			return err == nil && len(rows) > 0
		}, ch.tag+", cut when its client left, in the node's tool_calls")
		if len(rows) != 1 || rows[0].status != "error" || rows[0].errorType != "interrupted" {
			t.Fatalf("%s: rows %+v, want one interrupted", ch.tag, rows)
		}
		running, err := queryDB(ctx, db, `SELECT request_id FROM request_log WHERE state = 'running'`)
		if err != nil || len(running) != 0 {
			t.Fatalf("request log after the cut run was audited: running %v, err %v", running, err)
		}
	}
}

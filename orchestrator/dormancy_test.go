package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/testenv"
)

// convActors counts the node's actors of conversation id (its actor, or
// the actors of an earlier incarnation not yet removed).
func convActors(n *Node, id string) int {
	count := 0
	for _, bucket := range n.system.ProcessRegistry.LocalPIDs.LocalPIDs {
		for _, key := range bucket.Keys() {
			if strings.Contains(key, "conv-"+id) {
				count++
			}
		}
	}
	return count
}

// TestDormancySettingsReachTheConversations: [loop] dormant_after decides
// when an idle conversation gives up its actor, and a value at the idle
// timeout or above keeps it whole. Both cases are told apart from the
// default (2 s): the first must go dormant well before it, the second
// must stay past it.
func TestDormancySettingsReachTheConversations(t *testing.T) {
	for _, tc := range []struct {
		name, loop string
		dormant    bool
	}{
		{"dormant after 50ms", "dormant_after = \"50ms\"\n", true},
		{"kept whole", "dormant_after = \"10m\"\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := loadConfig(t, t.TempDir(), "data_dir = \"data\"\n[broker]\nlisten = \"127.0.0.1:0\"\n[loop]\n"+tc.loop, "")
			node := startNode(t, cfg, Options{Provider: mustScript(t, `{"name":"x","turns":[{"content":"hi"}]}`)})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if ans, err := node.Chat(ctx, "d1", "hello"); err != nil || ans.Err != nil {
				t.Fatalf("chat: %v %+v", err, ans)
			}
			if tc.dormant {
				// Gone well before the default would have it go (on a slow
				// machine it may be gone already).
				testenv.Eventually(t, 1500*time.Millisecond, func() bool { return convActors(node, "d1") == 0 }, "the idle conversation's actor stopped")
				return
			}
			// Still there past the default; this also shows that
			// convActors sees a conversation's actor at all.
			time.Sleep(actors.DefaultDormantAfter + 500*time.Millisecond)
			if n := convActors(node, "d1"); n == 0 {
				t.Fatal("no actor of the conversation: it gave it up although dormant_after is 10m")
			}
		})
	}
}

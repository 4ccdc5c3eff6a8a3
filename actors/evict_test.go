package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestEvictReloadsHistory: an idle conversation told Evict stops, and its
// next chat loads what another node appended meanwhile; without Evict the
// actor would answer from its memory.
func TestEvictReloadsHistory(t *testing.T) {
	tr := `{"name":"t","turns":[{"content":"turn 1"},{"content":"turn 2"},{"content":"turn 3"}]}`
	store := &memHistory{}
	h := newHarness(t, tr, func(o *ConvOptions) { o.History = store })
	if ans := h.chat(t, "one"); ans.Err != nil || ans.Text != "turn 1" {
		t.Fatalf("first chat: %+v", ans)
	}
	// Another node ran a chat of this conversation.
	if err := store.AppendHistory(context.Background(), "c", []llm.Message{
		{Role: llm.RoleUser, Content: "elsewhere"}, {Role: llm.RoleAssistant, Content: "turn 2"}}); err != nil {
		t.Fatal(err)
	}
	alive := func() bool {
		_, found := h.sys.ProcessRegistry.Get(actor.NewPID(h.sys.Address(), convPath("c")))
		return found
	}
	h.sys.Root.Send(h.convs.PID, &Evict{ConversationID: "nobody"}) // unknown: nothing happens
	h.sys.Root.Send(h.convs.PID, &Evict{ConversationID: "c"})
	testenv.Eventually(t, 5*time.Second, func() bool { return !alive() }, "evicted conversation actor stopped")
	if ans := h.chat(t, "two"); ans.Err != nil || ans.Text != "turn 3" {
		t.Fatalf("after eviction: %+v, want the third turn (history reloaded)", ans)
	}
}

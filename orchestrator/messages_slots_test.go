package orchestrator

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestMessagesReadOneAtATime: GET /v1/conversations/{id}/messages reads
// up to 8 MiB of the database on one of the store's two read connections,
// which chats load their history with; pages asked for at once take turns
// (MessagesReading), so that a chat always finds one: 64 clients asking
// at once made a chat wait 7 s before. A page that waits longer than
// MessagesWait for its turn is answered 429 with Retry-After; pages that
// take turns are all answered.
func TestMessagesReadOneAtATime(t *testing.T) {
	const wait = 300 * time.Millisecond
	node, base, token := startAPI(t, nil, Options{messagesWait: wait})
	appendBodies(t, node, "c", llm.Message{Role: llm.RoleUser, Content: "hi"})
	get := func() *http.Response {
		resp := send(t, "GET", base+"/v1/conversations/c/messages", token, nil)
		resp.Body.Close()
		return resp
	}
	for range MessagesReading {
		node.messagesSlots <- struct{}{} // pages being read
	}
	start := time.Now()
	resp := get()
	if took := time.Since(start); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || took < wait {
		t.Fatalf("page with every read slot held: %d, Retry-After %q after %v; want 429 with Retry-After 1 after %v",
			resp.StatusCode, resp.Header.Get("Retry-After"), took, wait)
	}
	done := make(chan int, 1)
	go func() { done <- get().StatusCode }()
	select {
	case code := <-done:
		t.Fatalf("page answered %d while every read slot was held, want it to wait", code)
	case <-time.After(wait / 3):
	}
	for range MessagesReading {
		<-node.messagesSlots
	}
	if code := <-done; code != http.StatusOK {
		t.Fatalf("page that waited for a slot freed in time: %d, want 200", code)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 16)
	for range 16 {
		wg.Go(func() { codes <- get().StatusCode })
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Fatalf("one of 16 pages asked at once: %d, want every one 200 (they take turns)", code)
		}
	}
}

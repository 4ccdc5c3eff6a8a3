package orchestrator

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestLargeAnswersUnreadAreBounded: an answer is held in memory until its
// client reads it; clients that ask for large answers and read nothing
// hold at most the answer budget, and the answers past it are refused 429
// with Retry-After at once, rather than each held for a minute (64 such
// clients of one address took a node from 300 MB to 1.1 GB). A client
// that reads gets its answer once a held one is gone, and small answers
// are never refused. The budget here is 12 MiB; the page asked for holds
// 500 messages of 16 KiB (8 MiB), more than the sockets' buffers take.
func TestLargeAnswersUnreadAreBounded(t *testing.T) {
	node, base, token := startAPI(t, nil, Options{httpLimits: httpLimits{AnswerBytes: 12 << 20}})
	long := llm.Message{Role: llm.RoleUser, Content: strings.Repeat("y", MaxMessageText+1)}
	msgs := make([]llm.Message, 500)
	for i := range msgs {
		msgs[i] = long
	}
	appendBodies(t, node, "long", msgs...)
	addr := strings.TrimPrefix(base, "http://")
	path := "/v1/conversations/long/messages?limit=500"
	// ask sends the request on a connection that reads only the answer's
	// head (its receive buffer kept small), and returns it.
	ask := func() (net.Conn, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, token)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		var head strings.Builder
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("answer's head: %v", err)
			}
			if line == "\r\n" {
				return c, head.String()
			}
			head.WriteString(line)
		}
	}
	held, head := ask()
	if !strings.HasPrefix(head, "HTTP/1.1 200 ") {
		t.Fatalf("first large answer: %q, want 200", head)
	}
	if _, head := ask(); !strings.HasPrefix(head, "HTTP/1.1 429 ") || !strings.Contains(head, "\r\nRetry-After: 1\r\n") {
		t.Fatalf("large answer while one of 8 MiB of a 12 MiB budget is unread: %q, want 429 with Retry-After 1", head)
	}
	resp := send(t, "GET", base+"/v1/conversations/long/messages?limit=2", token, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("small answer with the budget taken: %d, want 200", resp.StatusCode)
	}
	held.Close() // its write fails, and gives its share back
	for end := time.Now().Add(10 * time.Second); ; {
		resp := send(t, "GET", base+path, token, nil)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && n > 500*MaxMessageText {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("large answer after the unread one's client left: %d, %d bytes; want 200 with 500 messages of %d bytes", resp.StatusCode, n, MaxMessageText)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

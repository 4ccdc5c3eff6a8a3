package orchestrator

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// TestChatsRefusedNotReadyLogBounded: on a full disk every chat is refused
// 503 before it starts, on both endpoints, and the
// refusals log a bounded number of lines; once the window has passed, the
// next line counts the ones left out. Each refusal logged a line: 3,000
// in 0.3 s from a client retrying in a loop, while the disk was full.
func TestChatsRefusedNotReadyLogBounded(t *testing.T) {
	var logs testenv.Buffer
	var skew atomic.Int64
	o := Options{Provider: mustScript(t, helloTranscript), Logger: logs.Logger(slog.LevelInfo),
		diskFree: func(string) (uint64, error) { return 1 << 20, nil },
		now:      func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}
	_, base, token := startAPI(t, nil, o)
	const refusals = 100
	// Every endpoint that logs its refusals: OpenAI's, streamed or not,
	// and /v1/chat (a new conversation, or one named).
	refuse := func(i int) {
		t.Helper()
		path, body := "/v1/chat/completions", any(with(completion("x"), "stream", i%4 == 1))
		switch i % 4 {
		case 2:
			path, body = "/v1/chat", ChatRequest{Text: "x"}
		case 3:
			path, body = "/v1/chat", ChatRequest{Text: "x", ConversationID: "full-one"}
		}
		resp := send(t, "POST", base+path, token, body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s %+v on a full disk: %d, want 503", path, body, resp.StatusCode)
		}
	}
	for i := range refusals {
		refuse(i)
	}
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="chat failed"`) && strings.Contains(l, "disk nearly full") {
				out = append(out, l)
			}
		}
		return out
	}
	logged := lines()
	if len(logged) == 0 || len(logged) > busyLogBurst {
		t.Fatalf("%d chats refused on a full disk logged %d lines, want 1 to %d", refusals, len(logged), busyLogBurst)
	}
	skew.Store(int64(busyLogWindow + time.Second))
	refuse(0)
	after := lines()
	if len(after) != len(logged)+1 {
		t.Fatalf("a refusal after the window logged %d lines, want 1", len(after)-len(logged))
	}
	// Each of these endpoints logs its refusals; the ones left out are
	// counted on the next line.
	if want := fmt.Sprintf("suppressed=%d", refusals-len(logged)); !strings.Contains(after[len(after)-1], want) {
		t.Errorf("the line after the window: %s\nwant %s", after[len(after)-1], want)
	}
}

package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// TestInputBudgetTakes: the bucket starts full, a chat takes its bytes or
// none, a large chat leaves the share kept for small ones, the bucket
// refills at its rate, and a refusal says how long until the chat fits.
func TestInputBudgetTakes(t *testing.T) {
	const mib = 1 << 20
	t0 := time.Unix(1000, 0)
	perSec := 3600.0 * mib / 3600 // 1 MiB a second
	tests := []struct {
		name     string
		taken    int64         // taken at t0 first (must fit)
		at       time.Duration // then size is asked for at t0+at
		size     int64
		ok       bool
		wantWait time.Duration // of a refusal
	}{
		{name: "small chat from a full bucket", size: 10, ok: true},
		{name: "large chat from a full bucket", size: 4 * mib, ok: true},
		{name: "small chat takes the reserve", taken: 7 * mib, size: smallBody, ok: true},
		{name: "large chat leaves the reserve", taken: 7 * mib, size: smallBody + 1,
			wantWait: time.Duration(float64(smallBody+1) / perSec * float64(time.Second))},
		{name: "large chat fits once refilled", taken: 7 * mib, at: 2 * time.Second, size: mib, ok: true},
		// 1.5 MiB left of the 2 it needs with the reserve.
		{name: "large chat waits for the refill", taken: 7 * mib, at: 500 * time.Millisecond, size: mib,
			wantWait: 500 * time.Millisecond},
		{name: "small chat waits when none is left", taken: 8 * mib, size: 100,
			wantWait: time.Duration(100 / perSec * float64(time.Second))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newInputBudget(3600, 8)
			if tt.taken > 0 {
				if _, ok := b.take(t0, tt.taken); !ok {
					t.Fatalf("first take of %d refused", tt.taken)
				}
			}
			wait, ok := b.take(t0.Add(tt.at), tt.size)
			if ok != tt.ok {
				t.Fatalf("take %d: %v, want %v", tt.size, ok, tt.ok)
			}
			if d := wait - tt.wantWait; d < -time.Millisecond || d > time.Millisecond {
				t.Fatalf("wait %s, want %s", wait, tt.wantWait)
			}
		})
	}
	var none *inputBudget // [loop] chat_input_mb_per_hour < 0
	if _, ok := none.take(t0, 1<<40); !ok || newInputBudget(-1, 0) != nil {
		t.Fatal("no budget refused a chat")
	}
	if b := newInputBudget(0, 0); b.burst != DefaultChatInputBurstMB*mib || b.mbPerHour != DefaultChatInputMBPerHour {
		t.Fatalf("zero settings: burst %v, %d MiB/h; want the defaults", b.burst, b.mbPerHour)
	}
}

// TestHungUpHistoriesDoNotFillTheAudit: a client that sends histories new
// to the node and hangs up once the model has them had each one written
// to the audit database (3.4 MB ones grew audit.db by 286 MB in 10 s).
// Past [loop] chat_input_burst_mb such chats are refused 429, with a
// Retry-After that says when the input fits, before anything of them is
// stored; what the model was sent is stored whole; short messages still
// answer, on both chat endpoints.
func TestHungUpHistoriesDoNotFillTheAudit(t *testing.T) {
	const (
		burstMB  = 8
		requests = 12
		history  = 1 << 20
	)
	entered := make(chan struct{}, requests)
	model := funcProvider(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if last := req.Messages[len(req.Messages)-1].Content; last == "hello" {
			return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "hi"}}, nil
		}
		entered <- struct{}{}
		<-ctx.Done() // the client hangs up first
		return llm.Response{}, ctx.Err()
	})
	node, base, token := startAPI(t, func(c *Config) {
		c.Loop.ChatInputBurstMB, c.Loop.ChatInputMBPerHour = burstMB, 1
	}, Options{Provider: model})

	post := func(ctx context.Context, path string, body any) (*http.Response, error) {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}
	var admitted, refused int
	for i := range requests {
		filler := strings.Repeat("x", history/4)
		msgs := []map[string]string{
			{"role": "user", "content": fmt.Sprint(i, filler)}, {"role": "assistant", "content": filler},
			{"role": "user", "content": filler}, {"role": "assistant", "content": filler},
			{"role": "user", "content": "go on"}}
		ctx, hangUp := context.WithCancel(context.Background())
		type result struct {
			resp *http.Response
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := post(ctx, "/v1/chat/completions", map[string]any{"model": "evoclaw", "messages": msgs})
			done <- result{resp, err}
		}()
		select {
		case <-entered:
			hangUp()
			if r := <-done; r.err == nil {
				r.resp.Body.Close()
				t.Fatalf("request %d: answered %d after its client hung up", i, r.resp.StatusCode)
			}
			admitted++
		case r := <-done:
			hangUp()
			if r.err != nil {
				t.Fatal(r.err)
			}
			b, _ := io.ReadAll(r.resp.Body)
			r.resp.Body.Close()
			retry, _ := strconv.Atoi(r.resp.Header.Get("Retry-After"))
			// 1 MiB an hour: the seconds until the chat fits (up to an
			// hour for a MiB of history and the reserve; at least the
			// seconds of its records' kilobyte), not the 1 s of a busy
			// slot.
			if r.resp.StatusCode != http.StatusTooManyRequests || retry < 2 || retry > burstMB*3600 {
				t.Fatalf("request %d: %d, Retry-After %q, want 429 and the time the input fits: %s",
					i, r.resp.StatusCode, r.resp.Header.Get("Retry-After"), b)
			}
			refused++
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d: neither refused nor sent to the model", i)
		}
	}
	if admitted == 0 || refused < requests-burstMB {
		t.Fatalf("%d chats of 1 MiB admitted, %d refused; want the burst of %d MiB to admit some and refuse the rest", admitted, refused, burstMB)
	}
	// Nothing of a refused chat is stored; every admitted one is.
	if got := countEvents(t, node, "kind = 'chat_received'"); got != admitted {
		t.Fatalf("%d chat_received events, want one for each of the %d chats the model got", got, admitted)
	}
	res := queryAudit(t, node, "SELECT coalesce(sum(length(body)), 0) FROM messages")
	stored, _ := strconv.ParseInt(fmt.Sprint(res.Rows[0][0]), 10, 64)
	if stored < int64(admitted)*history || stored > (burstMB+1)<<20 {
		t.Fatalf("messages hold %d bytes for %d admitted chats of %d bytes; want theirs whole and at most the %d MiB burst",
			stored, admitted, history, burstMB)
	}

	// A person's short message still answers, on both endpoints; a long
	// one on /v1/chat is refused as the histories were.
	resp, err := post(context.Background(), "/v1/chat/completions", map[string]any{"model": "evoclaw",
		"messages": []map[string]string{{"role": "user", "content": "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, resp, http.StatusOK)
	resp.Body.Close()
	resp, err = post(context.Background(), "/v1/chat", map[string]any{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, resp, http.StatusOK)
	resp.Body.Close()
	resp, err = post(context.Background(), "/v1/chat", map[string]any{"text": strings.Repeat("y", history-512)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, resp, http.StatusTooManyRequests)
	resp.Body.Close()
	if retry, _ := strconv.Atoi(resp.Header.Get("Retry-After")); retry < 2 {
		t.Fatalf("/v1/chat refused with Retry-After %q, want the time its input fits", resp.Header.Get("Retry-After"))
	}
}

// TestInputRateErrorIsBusy: the refusal is a busy one (429 rate_limit_error)
// and refused before its chat started.
func TestInputRateErrorIsBusy(t *testing.T) {
	err := notStarted{fmt.Errorf("chat c: %w", &inputRateError{size: 10, retryAfter: 2500 * time.Millisecond})}
	if code, typ := chatErrorStatus(err); code != http.StatusTooManyRequests || typ != ErrTypeBusy {
		t.Fatalf("answered %d %s, want 429 %s", code, typ, ErrTypeBusy)
	}
	if !refusedBeforeStart(err) || !errors.Is(err, ErrTooManyChats) {
		t.Fatal("not a busy refusal before start")
	}
	if got := retryAfterSeconds(err); got != "3" {
		t.Fatalf("Retry-After %q, want 3 (2.5 s rounded up)", got)
	}
	if got := retryAfterSeconds(ErrTooManyChats); got != "1" {
		t.Fatalf("Retry-After of a busy slot %q, want 1", got)
	}
}

// TestChatInputSettings: [loop] chat_input_burst_mb must hold the largest
// chat beside the small chats' share; zero settings take the defaults and
// a negative rate lifts the bound.
func TestChatInputSettings(t *testing.T) {
	for _, tt := range []struct {
		perHour, burst int
		valid          bool
	}{
		{0, 0, true}, {-1, 0, true}, {64, minChatInputBurstMB, true},
		{64, minChatInputBurstMB - 1, false}, {64, -1, false},
	} {
		c := Config{Loop: LoopConf{ChatInputMBPerHour: tt.perHour, ChatInputBurstMB: tt.burst}}
		err := c.Validate()
		if (err == nil) != tt.valid || err != nil && !strings.Contains(err.Error(), "chat_input_burst_mb") {
			t.Fatalf("per hour %d, burst %d: %v, want valid %v", tt.perHour, tt.burst, err, tt.valid)
		}
		if !tt.valid {
			continue
		}
		if (c.Loop.ChatInputMBPerHour < 0) != (tt.perHour < 0) || c.Loop.ChatInputBurstMB < minChatInputBurstMB {
			t.Fatalf("per hour %d, burst %d became %d, %d", tt.perHour, tt.burst, c.Loop.ChatInputMBPerHour, c.Loop.ChatInputBurstMB)
		}
		if b := newInputBudget(c.Loop.ChatInputMBPerHour, c.Loop.ChatInputBurstMB); (b == nil) != (tt.perHour < 0) {
			t.Fatalf("per hour %d: budget %v", tt.perHour, b)
		}
	}
}

// TestTinyChatsTakeTheBudget: every chat of an API client takes what its
// records cost besides its input, so that one-byte chats sent as fast as
// the node answers them are refused once they used the burst up. Before,
// they took one byte each: a client grew audit.db by megabytes a second
// (some 2 KB a chat) without ever meeting [loop] chat_input_mb_per_hour.
func TestTinyChatsTakeTheBudget(t *testing.T) {
	const burstMB = minChatInputBurstMB
	now := time.Now()
	n := &Node{chatInput: newInputBudget(1, burstMB), now: func() time.Time { return now }}
	client := &ChatClient{Endpoint: "/v1/chat", Address: "192.0.2.1:40000", UserAgent: strings.Repeat("u", maxClientField), Node: "n1"}
	limit := burstMB << 20 / chatRecordBytes
	admitted := 0
	for ; admitted <= limit; admitted++ {
		if err := n.takeChatInput(ChatInput{ConversationID: "c", Text: "h", Client: client}); err != nil {
			var re *inputRateError
			if !errors.As(err, &re) || !errors.Is(err, ErrTooManyChats) {
				t.Fatalf("after %d chats: %v, want an input rate error", admitted, err)
			}
			break
		}
	}
	// Each takes more than chatRecordBytes: the burst ends before limit.
	if admitted == 0 || admitted >= limit {
		t.Fatalf("%d one-byte chats admitted from a burst of %d MiB; want fewer than %d", admitted, burstMB, limit)
	}
	// The node's own chats (no client) still take nothing.
	if err := n.takeChatInput(ChatInput{ConversationID: "job", Text: "h"}); err != nil {
		t.Fatalf("a chat of the node's own: %v", err)
	}
}

// TestChatInputInStatus: an operator sees the chat input budget in
// /v1/status and /metrics: what is left, what chats took, how many were
// refused and the Retry-After the last refusal was told. Before, none of
// it showed: clients were refused 429 and nothing said why.
func TestChatInputInStatus(t *testing.T) {
	const burstMB = minChatInputBurstMB
	model := funcProvider(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}}, nil
	})
	_, base, token := startAPI(t, func(c *Config) {
		c.Loop.ChatInputBurstMB, c.Loop.ChatInputMBPerHour = burstMB, 1
	}, Options{Provider: model})
	status := func() Status {
		var s Status
		decodeBody(t, send(t, http.MethodGet, base+"/v1/status", token, nil), &s)
		return s
	}
	s := status()
	if s.ChatInput == nil || s.ChatInput.BurstBytes != burstMB<<20 || s.ChatInput.AvailableBytes != s.ChatInput.BurstBytes ||
		s.ChatInput.MBPerHour != 1 || s.ChatInput.Refused != 0 || s.ChatInput.TakenBytes != 0 {
		t.Fatalf("a fresh node's chat input %+v, want the full burst of %d MiB", s.ChatInput, burstMB)
	}
	text := strings.Repeat("x", 1<<20-1024)
	var admitted, refused int
	var lastRetry string
	for range burstMB + 2 {
		resp := send(t, http.MethodPost, base+"/v1/chat", token, ChatRequest{Text: text})
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			refused++
			lastRetry = resp.Header.Get("Retry-After")
		default:
			t.Fatalf("chat answered %d", resp.StatusCode)
		}
	}
	if admitted == 0 || refused == 0 {
		t.Fatalf("%d admitted, %d refused: want both", admitted, refused)
	}
	in := status().ChatInput
	if in.Refused != int64(refused) || fmt.Sprint(in.LastRetryAfterS) != lastRetry || in.LastRefused.IsZero() {
		t.Fatalf("status says %d refused, the last told %d s; the client saw %d refused, the last told %s", in.Refused, in.LastRetryAfterS, refused, lastRetry)
	}
	if in.TakenBytes < int64(admitted)*int64(len(text)) || in.AvailableBytes >= in.BurstBytes-in.TakenBytes+(64<<10) || in.ReservedBytes != in.BurstBytes/chatInputReserve {
		t.Fatalf("status %+v after %d chats of %d bytes", in, admitted, len(text))
	}
	resp := send(t, http.MethodGet, base+"/metrics", token, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		fmt.Sprintf("evoclaw_chat_input_refused_total{node=%q} %d\n", "orchestrator", refused),
		"evoclaw_chat_input_available_bytes{", "evoclaw_chat_input_bytes_total{",
	} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
}

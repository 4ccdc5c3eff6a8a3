package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/evoclaw/evoclaw/persistence/hot"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

func apiNode(t *testing.T, transcript string) (*Node, string, string) {
	t.Helper()
	p, err := scripted.Parse([]byte(transcript))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	node, err := Start(context.Background(), Config{DataDir: dir, Broker: BrokerConf{Listen: "127.0.0.1:0"}, HTTP: HTTPConf{Listen: "127.0.0.1:0"}},
		Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	fi, err := os.Stat(filepath.Join(dir, HTTPTokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %v %v, want mode 0600", fi, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return node, "http://" + node.HTTPAddr(), strings.TrimSpace(string(b))
}

func call(t *testing.T, method, url, token string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decode: %v", method, url, err)
		}
	}
	return resp.StatusCode
}

func TestHTTPAPI(t *testing.T) {
	node, base, token := apiNode(t, `{"name":"api","turns":[{"content":"hello over http"},{"content":"second"}]}`)
	if code := call(t, "GET", base+"/healthz", "", nil, nil); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	for _, path := range []string{"/v1/status", "/v1/logs"} {
		if code := call(t, "GET", base+path, "", nil, nil); code != http.StatusUnauthorized {
			t.Fatalf("%s without a token: %d", path, code)
		}
		if code := call(t, "GET", base+path, "wrong-token-wrong-token", nil, nil); code != http.StatusUnauthorized {
			t.Fatalf("%s with a wrong token: %d", path, code)
		}
	}
	var chat ChatResponse
	if code := call(t, "POST", base+"/v1/chat", token, ChatRequest{ConversationID: "web", Text: "hi"}, &chat); code != 200 || chat.Text != "hello over http" {
		t.Fatalf("chat %d %+v", code, chat)
	}
	var page LogsPage
	if code := call(t, "GET", base+"/v1/logs?kind=message", token, nil, &page); code != 200 || len(page.Entries) != 2 {
		t.Fatalf("logs %d %+v", code, page)
	}
	// A long poll returns as soon as something newer is committed.
	type result struct {
		page LogsPage
		took time.Duration
	}
	got := make(chan result, 1)
	go func() {
		var p LogsPage
		start := time.Now()
		call(t, "GET", fmt.Sprintf("%s/v1/logs?after=%d&wait=20s", base, page.Head), token, nil, &p)
		got <- result{p, time.Since(start)}
	}()
	time.Sleep(100 * time.Millisecond) // the poll is waiting (a later chat still wakes it)
	if _, err := node.Chat(context.Background(), "web", "again"); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if len(r.page.Entries) == 0 || r.took > 10*time.Second {
		t.Fatalf("long poll got %d entries after %s", len(r.page.Entries), r.took)
	}
	// A filtered long poll waits through records it does not match: it
	// once answered empty at the first one, and its client asked again, a
	// request per record on a busy node.
	go func() {
		var p LogsPage
		call(t, "GET", fmt.Sprintf("%s/v1/logs?kind=event&after=%d&wait=20s", base, r.page.Head), token, nil, &p)
		got <- result{page: p}
	}()
	time.Sleep(100 * time.Millisecond) // the poll is waiting (a later record still wakes it)
	node.tiers.Ring.Add(hot.Entry{Seq: r.page.Head + 1, Kind: hot.KindMessage, Name: "user"})
	time.Sleep(100 * time.Millisecond)
	node.tiers.Ring.Add(hot.Entry{Seq: r.page.Head + 2, Kind: hot.KindEvent, Name: "agent_online"})
	if r := <-got; len(r.page.Entries) != 1 || r.page.Entries[0].Seq != r.page.Head || r.page.Entries[0].Kind != hot.KindEvent {
		t.Fatalf("filtered long poll answered %+v, want the event alone", r.page)
	}
	// Prometheus text format, behind the same token.
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`evoclaw_llm_calls_total{node="orchestrator"} 2`, `evoclaw_agents{node="orchestrator",state="online"} 0`, "go_goroutines"} {
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("metrics lack %q:\n%.2000s", want, metrics)
		}
	}
	if code := call(t, "GET", base+"/metrics", "", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("metrics without a token: %d", code)
	}
	var st Status
	if code := call(t, "GET", base+"/v1/status", token, nil, &st); code != 200 || st.NodeID != DefaultNodeID || st.Metrics.LLMCalls != 2 {
		t.Fatalf("status %d %+v", code, st)
	}
	for _, bad := range []string{"/v1/logs?kind=gossip", "/v1/logs?after=x", "/v1/logs?wait=soon", "/v1/logs?limit=-1"} {
		if code := call(t, "GET", base+bad, token, nil, nil); code != http.StatusBadRequest {
			t.Fatalf("%s: %d, want 400", bad, code)
		}
	}
	if code := call(t, "POST", base+"/v1/chat", token, map[string]any{"conversation_id": "a/b", "text": "x"}, nil); code != http.StatusBadRequest {
		t.Fatalf("bad conversation id: %d", code)
	}
}

func TestHTTPAPIExposedNeedsAToken(t *testing.T) {
	_, err := Start(context.Background(), Config{DataDir: t.TempDir(), Broker: BrokerConf{Listen: "127.0.0.1:0"}, HTTP: HTTPConf{Listen: "0.0.0.0:0"}}, Options{})
	if !errors.Is(err, ErrHTTPExposed) || !strings.Contains(err.Error(), "set [http] token_env to the name of an environment variable") {
		t.Fatalf("err %v, want ErrHTTPExposed saying what to set", err)
	}
	t.Setenv("EVOCLAW_TEST_HTTP_TOKEN", "short")
	_, err = Start(context.Background(), Config{DataDir: t.TempDir(), Broker: BrokerConf{Listen: "127.0.0.1:0"},
		HTTP: HTTPConf{Listen: "0.0.0.0:0", TokenEnv: "EVOCLAW_TEST_HTTP_TOKEN"}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("err %v, want a too-short token refused", err)
	}
}

// stuckProvider never answers before its context ends.
type stuckProvider struct{}

func (stuckProvider) Name() string { return "stuck" }
func (stuckProvider) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	<-ctx.Done()
	return llm.Response{}, ctx.Err()
}

func TestHTTPChatTimeoutIsAGatewayTimeout(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Broker: BrokerConf{Listen: "127.0.0.1:0"}, HTTP: HTTPConf{Listen: "127.0.0.1:0"}}
	cfg.Loop.ChatTimeout.Duration = 300 * time.Millisecond
	node, err := Start(context.Background(), cfg, Options{Provider: stuckProvider{}})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	token, err := os.ReadFile(filepath.Join(dir, HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	var e ChatFailure
	code := call(t, "POST", "http://"+node.HTTPAddr()+"/v1/chat", strings.TrimSpace(string(token)), ChatRequest{ConversationID: "slow", Text: "hi"}, &e)
	if code != http.StatusGatewayTimeout || e.Error.Type != ErrTypeTimeout || !strings.Contains(e.Error.Message, "no answer within") {
		t.Fatalf("status %d %v, want 504 naming the timeout", code, e)
	}
}

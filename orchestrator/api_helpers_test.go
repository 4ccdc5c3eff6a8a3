package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// funcProvider is an llm.Provider made of a function.
type funcProvider func(ctx context.Context, req llm.Request) (llm.Response, error)

func (funcProvider) Name() string { return "func" }
func (f funcProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return f(ctx, req)
}

// failing answers every completion with err.
func failing(err error) funcProvider {
	return func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, err }
}

func mustScript(t testing.TB, transcript string) llm.Provider {
	t.Helper()
	p, err := scripted.Parse([]byte(transcript))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startAPI starts a node with its HTTP API on a loopback port; mod may
// change its config. It returns the node, the API base URL and the token.
func startAPI(t testing.TB, mod func(*Config), o Options) (*Node, string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Broker: BrokerConf{Listen: "127.0.0.1:0"}, HTTP: HTTPConf{Listen: "127.0.0.1:0"}}
	if mod != nil {
		mod(&cfg)
	}
	node, err := Start(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return node, "http://" + node.HTTPAddr(), strings.TrimSpace(string(b))
}

// send posts body (a string or a value to encode) with the token and extra
// headers, and returns the response; the caller closes its body.
func send(t testing.TB, method, url, token string, body any, headers ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(enc))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// wantStatus fails the test, showing the body, unless resp has status.
func wantStatus(t testing.TB, resp *http.Response, status int) {
	t.Helper()
	if resp.StatusCode != status {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
}

// decodeBody decodes resp's JSON body into v and closes it.
func decodeBody(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v\n%s", resp.Request.URL.Path, err, b)
	}
}

// sseEvent is one server-sent event; a comment has comment set.
type sseEvent struct {
	name, data string
	comment    bool
}

// readSSE reads events until the stream ends.
func readSSE(t testing.TB, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
			out = append(out, sseEvent{comment: true, data: strings.TrimSpace(line[1:])})
		case strings.HasPrefix(line, "event: "):
			cur.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			cur.data += line[len("data: "):]
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// fakeChatServer speaks the OpenAI chat-completions format on loopback as
// a local llama.cpp server would: the first request gets a tool call, the
// request carrying the tool's result gets a text answer quoting it.
func fakeChatServer(t *testing.T) (*httptest.Server, func() []map[string]any) {
	var seen testenv.Recorded[map[string]any]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		seen.Add(req)
		msgs, _ := req["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		w.Header().Set("Content-Type", "application/json")
		if last["role"] == "tool" {
			fmt.Fprintf(w, `{"id":"2","object":"chat.completion","model":"tiny","choices":[{"index":0,"finish_reason":"stop",
			  "message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":40,"completion_tokens":6}}`, "the tool said "+fmt.Sprint(last["content"]))
			return
		}
		fmt.Fprint(w, `{"id":"1","object":"chat.completion","model":"tiny","choices":[{"index":0,"finish_reason":"tool_calls",
		  "message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
		  "function":{"name":"bench-edge__noop","arguments":"{}"}}]}}],"usage":{"prompt_tokens":30,"completion_tokens":5}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, seen.All
}

// TestOpenAICompatibleProviderDrivesTheLoop configures [llm] provider =
// "openai" against a loopback server and runs a chat whose tool call goes
// over MQTT to a real edge agent and its tool process. The sampling hints
// of a chat of the HTTP API reach the model server on each of its calls,
// and only that chat's: a chat without hints sends none, and a
// conversation continued later runs with the hints of the request that
// continues it.
func TestOpenAICompatibleProviderDrivesTheLoop(t *testing.T) {
	srv, requests := fakeChatServer(t)
	dir := t.TempDir()
	cfg := Config{DataDir: filepath.Join(dir, "orch"), Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}},
		HTTP: HTTPConf{Listen: "127.0.0.1:0"},
		LLM:  llm.Config{Endpoint: llm.Endpoint{Provider: llm.ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "tiny"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node := startNode(t, cfg, Options{})
	startAgent(t, node, dir, testAgent{Wait: 30 * time.Second})
	ans, err := node.Chat(ctx, "http", "run noop")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(ans.Text) != "the tool said ok" || ans.Usage.InputTokens != 70 || ans.Usage.OutputTokens != 11 {
		t.Fatalf("answer %+v", ans)
	}
	reqs := requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the model server, want 2", len(reqs))
	}
	tools, _ := json.Marshal(reqs[0]["tools"])
	if !strings.Contains(string(tools), `"name":"bench-edge__noop"`) || !strings.Contains(string(tools), `"name":"edge_call"`) {
		t.Fatalf("tools sent: %s", tools)
	}
	res := queryAudit(t, node,
		`SELECT provider, model, input_tokens, output_tokens, status FROM llm_calls WHERE conversation_id = 'http' ORDER BY iteration`)
	if got := fmt.Sprint(res.Rows); got != "[[openai tiny 30 5 success] [openai tiny 40 6 success]]" {
		t.Fatalf("llm_calls %s", got)
	}

	token, err := os.ReadFile(filepath.Join(cfg.DataDir, HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + node.HTTPAddr()
	for i, step := range []struct {
		path string
		body map[string]any
		want string // the sampling fields of each of the chat's two requests
	}{
		{"", nil, `{}`}, // node.Chat above
		{"/v1/chat/completions", with(completion("run noop"), "conversation_id", "hints", "temperature", 0, "seed", 7, "top_p", 0.5,
			"frequency_penalty", 0.25, "presence_penalty", -0.25),
			`{"frequency_penalty":0.25,"presence_penalty":-0.25,"seed":7,"temperature":0,"top_p":0.5}`},
		{"/v1/chat/completions", with(completion("run noop again"), "conversation_id", "hints", "temperature", 1.5), `{"temperature":1.5}`},
		{"/v1/chat/completions", with(completion("and again"), "conversation_id", "hints"), `{}`},
		{"/v1/chat", map[string]any{"conversation_id": "hints", "text": "once more", "seed": 3}, `{"seed":3}`},
	} {
		if step.path != "" {
			resp := send(t, "POST", base+step.path, strings.TrimSpace(string(token)), step.body)
			wantStatus(t, resp, 200)
			resp.Body.Close()
		}
		reqs := requests()
		if len(reqs) != 2*(i+1) {
			t.Fatalf("step %d: %d requests to the model server, want %d", i, len(reqs), 2*(i+1))
		}
		for _, req := range reqs[2*i:] {
			got := map[string]any{}
			for _, k := range []string{"temperature", "top_p", "frequency_penalty", "presence_penalty", "seed"} {
				if v, ok := req[k]; ok {
					got[k] = v
				}
			}
			if b, _ := json.Marshal(got); string(b) != step.want {
				t.Errorf("step %d (%v): the model server got sampling %s, want %s", i, step.body, b, step.want)
			}
		}
	}
}

// TestMalformedMessagesAreAudited publishes broken payloads on agent topics:
// the node drops them without harm and records each as an event.
func TestMalformedMessagesAreAudited(t *testing.T) {
	p, err := scripted.Parse([]byte(`{"name":"x","turns":[{"content":"fine"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Anonymous on loopback: the vandal is any local client.
	node, err := Start(ctx, Config{DataDir: t.TempDir(), Broker: BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: BrokerSecurity{AllowAnonymous: true}}}, Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	c := mqtttest.Connect(t, mqttc.Options{BrokerURL: node.BrokerURL(), ClientID: "vandal"})
	for topic, payload := range map[string]string{
		wire.ReportsTopic("pi-x"):      `{"report_type":`,
		wire.StatusTopic("pi-x"):       `{"agent_id":"pi-x","status":"sleeping"}`,
		wire.CapabilitiesTopic("pi-y"): `{"agent_id":"pi-x","capabilities":"impostor"}`,
	} {
		if err := c.Publish(ctx, mqttc.Message{Topic: topic, Payload: []byte(payload), QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		res, err := sqlite.QueryReadOnly(ctx, node.AuditPath(), `SELECT count(*) FROM events WHERE kind = 'invalid_message'`)
		return err == nil && fmt.Sprint(res.Rows[0][0]) == "3"
	}, "three invalid_message events")
	// The node still answers.
	if ans, err := node.Chat(ctx, "after", "hi"); err != nil || ans.Text != "fine" {
		t.Fatalf("chat after garbage: %+v %v", ans, err)
	}
}

package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// strictAPI is an OpenAI-compatible endpoint that refuses a request, whole,
// when a function's parameters are not an object schema at the top level,
// as OpenAI's and Anthropic's APIs do ("Invalid schema for function 'x':
// schema must be a JSON Schema of 'type: "object"'").
func strictAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tools []struct {
				Function struct {
					Name       string         `json:"name"`
					Parameters map[string]any `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for _, tl := range req.Tools {
			p := tl.Function.Parameters
			_, propsOK := p["properties"].(map[string]any)
			_, reqOK := p["required"].([]any)
			if p["type"] != "object" || p["properties"] != nil && !propsOK || p["required"] != nil && !reqOK ||
				hasNull(p, "properties", "required") {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":"Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'","type":"invalid_request_error"}}`,
					tl.Function.Name)
				return
			}
		}
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"fine"}}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hasNull says whether one of keys of p is given as null.
func hasNull(p map[string]any, keys ...string) bool {
	for _, k := range keys {
		if v, ok := p[k]; ok && v == nil {
			return true
		}
	}
	return false
}

// TestAgentToolSchemasEveryProviderTakes: one agent listing a tool whose
// parameters are not an object schema made every chat of the node fail,
// whichever tools it used: the API refuses the whole request. Such a tool
// is now left out (its arguments could never be valid), and what a peer
// plausibly meant is repaired; the other tools and chats are unaffected.
func TestAgentToolSchemasEveryProviderTakes(t *testing.T) {
	api := strictAPI(t)
	cfg, _ := loadConfig(t, t.TempDir(), fmt.Sprintf("data_dir = \"orch\"\n[broker]\nurl = %q\n[llm]\nprovider = \"openai\"\nbase_url = %q\nmodel = \"m\"\nprobe = \"off\"\nretries = 0\n",
		mqtttest.StartEmbedded(t), api.URL), "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := Start(ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })

	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	props := obj("path", obj("type", "string"))
	tools := []wire.ToolInfo{
		{Name: "fine", Parameters: obj("type", "object", "properties", props, "required", []any{"path"})},
		{Name: "a_string", Parameters: obj("type", "string")},
		{Name: "a_list", Parameters: obj("type", "object", "properties", []any{"path"})},
		{Name: "required_word", Parameters: obj("type", "object", "properties", props, "required", "path")},
		{Name: "type_list", Parameters: obj("type", []any{"object", "null"})},
		{Name: "empty", Parameters: obj()},
		{Name: "no_type", Parameters: obj("properties", props)},
		{Name: "php_empty", Parameters: obj("type", "object", "properties", []any{})},
		{Name: "null_required", Parameters: obj("type", "object", "properties", props, "required", nil)},
	}
	listingAgent(t, ctx, node, "pi1", tools, nil)
	testenv.Eventually(t, 10*time.Second, func() bool { _, listed := node.agentTools("pi1"); return listed }, "pi1 listed")

	if _, err := node.Chat(ctx, "c1", "hello"); err != nil {
		t.Fatalf("a chat failed with pi1 online: %v", err)
	}
	offered, _ := node.agentTools("pi1")
	var names []string
	for _, tl := range offered {
		names = append(names, tl.Name)
	}
	want := []string{"fine", "empty", "no_type", "php_empty", "null_required"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("offered %v, want %v", names, want)
	}
}

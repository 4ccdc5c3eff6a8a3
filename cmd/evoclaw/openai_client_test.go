package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// Where the official openai npm client comes from: $EVOCLAW_OPENAI_NODE_MODULES
// (a node_modules directory holding openai), else the one .ci/run installs
// under .peers/ at the module root.
const (
	openaiModulesEnv = "EVOCLAW_OPENAI_NODE_MODULES"
	requirePeersEnv  = "EVOCLAW_REQUIRE_PEERS"
)

// findOpenAIClient returns node and the openai package directory, or skips
// the test loudly (fails it when peers are required).
func findOpenAIClient(t *testing.T) (string, string) {
	t.Helper()
	modules := os.Getenv(openaiModulesEnv)
	if modules == "" {
		modules, _ = filepath.Abs("../../.peers/node_modules")
	}
	pkg := filepath.Join(modules, "openai")
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed (apt-get install nodejs npm)"
	default:
		if _, err := os.Stat(filepath.Join(pkg, "package.json")); err != nil {
			missing = fmt.Sprintf("the openai npm package is not in %s (.ci/run installs it; or set %s)", modules, openaiModulesEnv)
		}
	}
	if missing == "" {
		return node, pkg
	}
	if os.Getenv(requirePeersEnv) == "1" {
		t.Fatalf("%s but %s=1", missing, requirePeersEnv)
	}
	t.Skipf("SKIP: %s; set %s=1 to make this a failure; the official OpenAI client test did NOT run", missing, requirePeersEnv)
	return "", ""
}

// TestOpenAIClient drives a real `evoclaw serve` with a real `evoclaw edge`
// agent through the official openai npm client: models.list, a completion
// whose scripted model calls the agent's tool, the same streamed with tool
// progress chunks, and every error status the client can meet.
func TestOpenAIClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node and evoclaw processes")
	}
	node, pkg := findOpenAIClient(t)
	dir := t.TempDir()
	counter, marker := filepath.Join(dir, "count"), filepath.Join(dir, "hang-started")
	transcript := filepath.Join(dir, "transcript.json")
	if err := os.WriteFile(transcript, []byte(fmt.Sprintf(`{"name":"oai","turns":[
	  {"content":"","tool_calls":[{"id":"c1","name":"edge-a__count","arguments":{"file":%q}}],"expect_tools":["edge-a__count"]},
	  {"content":"count is {{result c1}}"},
	  {"content":"","tool_calls":[{"id":"h1","name":"edge-a__hang","arguments":{"marker":%q}}]}]}`, counter, marker)), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "evoclaw.toml")
	writeTestFile(t, conf, scriptedServeTOML(fmt.Sprintf("data_dir = %q\n", filepath.Join(dir, "data")), transcript, "[loop]\nchat_timeout = \"3s\"\n"))
	brokerURL, api := startServe(t, conf)
	token, err := os.ReadFile(filepath.Join(dir, "data", orchestrator.HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	startEdge(t, "edge-a", brokerURL)
	agentOnline(t, api, strings.TrimSpace(string(token)), "edge-a")
	// A node with no [llm]: every chat is refused.
	noModelConf := filepath.Join(dir, "nomodel.toml")
	writeTestFile(t, noModelConf, fmt.Sprintf("data_dir = %q\n[broker]\nlisten = \"127.0.0.1:0\"\n[http]\nlisten = \"127.0.0.1:0\"\n",
		filepath.Join(dir, "nomodel")))
	_, noModelAPI := startServe(t, noModelConf)
	noModelToken, err := os.ReadFile(filepath.Join(dir, "nomodel", orchestrator.HTTPTokenFile))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/openai-client.cjs")
	cmd.Env = append(os.Environ(), "OPENAI_MODULE="+pkg, "EVOCLAW_BASE_URL="+api+"/v1",
		"EVOCLAW_TOKEN="+strings.TrimSpace(string(token)), "MARKER="+marker,
		"NOMODEL_BASE_URL="+noModelAPI+"/v1", "NOMODEL_TOKEN="+strings.TrimSpace(string(noModelToken)))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	type apiErr struct {
		Status  *int   `json:"status"`
		Type    string `json:"type"`
		Message string `json:"message"`
		Cls     string `json:"cls"`
		Param   string `json:"param"`
		Code    string `json:"code"`
		// Attempts counts the requests the client sent (no_model*).
		Attempts int `json:"attempts"`
	}
	var out struct {
		Models     []string
		Completion struct {
			Content, Finish, Object string
			ConversationID          string `json:"conversation_id"`
			Usage                   struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		Stream struct {
			Progress              []string
			Content, Finish, Role string
			Usage                 *struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		Stop struct {
			Content, Finish string
			Streamed        struct {
				Content, Finish string
				Usage           *struct {
					TotalTokens int `json:"total_tokens"`
				}
			}
		}
		Errors map[string]apiErr
		Busy   struct {
			Marker   bool
			Statuses []int
			Types    []string
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("node output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	t.Logf("openai client saw: %s", stdout.String())
	if fmt.Sprint(out.Models) != "[evoclaw]" {
		t.Errorf("models %v", out.Models)
	}
	if c := out.Completion; c.Content != "count is 1" || c.Finish != "stop" || c.Object != "chat.completion" ||
		!strings.HasPrefix(c.ConversationID, "oai-") || c.Usage.TotalTokens == 0 {
		t.Errorf("completion %+v", c)
	}
	s := out.Stream
	if s.Role != "assistant" || s.Content != "count is 2" || s.Finish != "stop" || s.Usage == nil ||
		!slices.Contains(s.Progress, "tool_start:count") || !slices.Contains(s.Progress, "tool_end:count") {
		t.Errorf("stream %+v", s)
	}
	st := out.Stop
	if st.Content != "count" || st.Finish != "stop" || st.Streamed.Content != "count" || st.Streamed.Finish != "stop" ||
		st.Streamed.Usage == nil || st.Streamed.Usage.TotalTokens == 0 {
		t.Errorf("stop sequences: client saw %+v, want \"count\" and finish stop, streamed or not", st)
	}
	for name, want := range map[string]struct {
		status      int // 0: none (an error event after the 200 header)
		typ         string
		param, code string
	}{
		"auth": {401, orchestrator.ErrTypeAuth, "", orchestrator.CodeInvalidAPIKey}, "model": {404, orchestrator.ErrTypeNotFound, "model", "model_not_found"},
		"temperature": {400, orchestrator.ErrTypeInvalidRequest, "temperature", ""},
		"stop":        {400, orchestrator.ErrTypeInvalidRequest, "stop", ""},
		"logit_bias":  {400, orchestrator.ErrTypeInvalidRequest, "logit_bias", ""},
		"tools":       {400, orchestrator.ErrTypeInvalidRequest, "tools", ""}, "upstream": {502, orchestrator.ErrTypeUpstream, "", ""},
		"timeout": {504, orchestrator.ErrTypeTimeout, "", ""}, "streamed": {0, orchestrator.ErrTypeTimeout, "", ""},
		"streamed_at_once": {502, orchestrator.ErrTypeUpstream, "", ""},
		// once, not retried twice as a 503 would be: X-Should-Retry: false
		"no_model":          {503, orchestrator.ErrTypeNotReady, "", orchestrator.CodeModelNotConfigured},
		"no_model_streamed": {503, orchestrator.ErrTypeNotReady, "", orchestrator.CodeModelNotConfigured},
	} {
		got, ok := out.Errors[name]
		status := 0
		if got.Status != nil {
			status = *got.Status
		}
		if !ok || status != want.status || got.Type != want.typ || got.Param != want.param || got.Code != want.code {
			t.Errorf("%s: client saw %+v (status %d), want status %d type %s param %q code %q", name, got, status, want.status, want.typ, want.param, want.code)
		}
		if strings.HasPrefix(name, "no_model") && (got.Attempts != 1 || !strings.Contains(got.Message, "no language model is configured on this node")) {
			t.Errorf("%s: %d requests sent (want 1: not retried), message %q", name, got.Attempts, got.Message)
		}
	}
	busy := 0
	for _, st := range out.Busy.Statuses {
		switch st {
		case 429:
			busy++
		case 502, 504: // queued chats end when the hanging one is canceled, or time out themselves
		default:
			t.Errorf("busy conversation: unexpected status %d in %v", st, out.Busy.Statuses)
		}
	}
	if !out.Busy.Marker || busy != 1 || out.Busy.Statuses[len(out.Busy.Statuses)-1] != 504 || fmt.Sprint(out.Busy.Types) != "[rate_limit_error]" {
		t.Errorf("busy conversation: %+v, want one 429 (16 queue behind a hanging chat) and 504 for the hanging one", out.Busy)
	}
}

// startServe runs `evoclaw serve --config conf` and returns its broker URL
// and API base URL once it says it is ready.
func startServe(t *testing.T, conf string) (string, string) {
	t.Helper()
	_, m := startProc(t, procSpec{Ready: serveReady, Interrupt: true}, "serve", "--config", conf)
	return m[1], m[2]
}

// agentOnline waits until /v1/status shows agent online with its tools.
func agentOnline(t *testing.T, api, token, agent string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, func() bool {
		req, _ := http.NewRequest("GET", api+"/v1/status", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st orchestrator.Status
		if json.NewDecoder(resp.Body).Decode(&st) != nil {
			return false
		}
		for _, a := range st.Agents {
			if a.ID == agent && a.Online && len(a.Tools) > 0 {
				return true
			}
		}
		return false
	}, "agent "+agent+" online with tools")
}

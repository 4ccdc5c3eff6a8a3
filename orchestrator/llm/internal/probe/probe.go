// Package probe asks an OpenAI-compatible server what a model supports,
// where the server says so:
//
//   - GET {base_url}/models, which every such server has: whether the
//     model is listed, and vLLM's max_model_len (the context window it
//     enforces).
//   - POST {root}/api/show {"model": ...}, Ollama's model details: the
//     capabilities list ("tools" when the model's template supports tool
//     calls, "vision" when it takes images) and the context: num_ctx from the model's parameters, else
//     OllamaDefaultContext, never above the model's trained length.
//   - GET {root}/props, llama.cpp's server settings: the slot context
//     n_ctx, the chat template (tool support when it handles tools, or
//     chat_template_caps when the server reports it), and modalities.vision
//     (started with a multimodal projector).
//
// {root} is the base URL without its /v1. An endpoint that is missing,
// refuses or answers something else is skipped; Probe fails only when
// none answered. Every body read is bounded by MaxBody.
package probe

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
)

// MaxBody bounds each response read; Ollama's /api/show carries the
// model's license and template, tens of KiB.
const MaxBody = 1 << 20

// MaxContext is the largest context length taken from a server: 16M
// tokens, far above any model's. A larger, negative or non-integer value
// is not a context length, and is ignored as a missing one is.
const MaxContext = 1 << 24

// OllamaDefaultContext is the context Ollama gives a model whose
// parameters set no num_ctx (its default since 0.6.x). A server started
// with another OLLAMA_CONTEXT_LENGTH needs context_tokens in the config.
const OllamaDefaultContext = 4096

// Servers that Probe recognises.
const (
	ServerOllama   = "ollama"
	ServerLlamaCpp = "llama.cpp"
	ServerVLLM     = "vllm"
	ServerUnknown  = "openai-compatible"
)

// ToolSupport is what the server says of the model's tool calls.
type ToolSupport string

// Tool support values.
const (
	ToolsUnknown ToolSupport = "unknown" // the server does not say
	ToolsNative  ToolSupport = "native"  // the server parses tool calls
	ToolsNone    ToolSupport = "none"    // the model or server has none
)

// Capabilities are what the server said about one model.
type Capabilities struct {
	Server string
	// Listed reports whether /models lists the model (servers that serve
	// one model ignore the name; Ollama refuses unknown ones).
	Listed bool
	// ContextTokens is the context window in tokens; 0 when unknown.
	ContextTokens int
	// TrainedContext is the model's trained context length, for the log.
	TrainedContext int
	Tools          ToolSupport
	// Vision reports that the server says the model takes images (Ollama's
	// "vision" capability, llama.cpp's modalities.vision); false when it
	// says not or does not say.
	Vision bool
	// Sources are the endpoints that answered.
	Sources []string
}

// Options say what to probe. Client defaults to a plain client; the
// caller's context bounds the whole probe.
type Options struct {
	BaseURL string
	Model   string
	APIKey  string
	Client  *http.Client
}

// ErrNoAnswer is returned when no probe endpoint answered.
var ErrNoAnswer = errors.New("no probe endpoint answered")

// ErrNoServer is also wrapped when no request got any HTTP answer at all
// (connection refused, unknown host, no answer in time, the connection
// closed before an answer): nobody is serving at the base URL. A 404, an
// error status or an unreadable body is an answer.
var ErrNoServer = errors.New("no HTTP server answering")

// noServer marks a request that got no HTTP answer.
type noServer struct{ err error }

func (e noServer) Error() string { return e.err.Error() }
func (e noServer) Unwrap() error { return e.err }

// Probe asks the server about o.Model.
func Probe(ctx context.Context, o Options) (Capabilities, error) {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	base := strings.TrimRight(o.BaseURL, "/")
	root := strings.TrimSuffix(base, "/v1")
	caps := Capabilities{Server: ServerUnknown, Tools: ToolsUnknown}
	var errs []error
	answered := false
	step := func(name string, err error) {
		if err == nil {
			caps.Sources = append(caps.Sources, name)
			return
		}
		var ns noServer
		answered = answered || !errors.As(err, &ns)
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	step("/models", o.models(ctx, base, &caps))
	if ctx.Err() == nil && caps.Server == ServerUnknown {
		step("/api/show", o.ollama(ctx, root, &caps))
	}
	if ctx.Err() == nil && caps.Server != ServerOllama && caps.Server != ServerVLLM {
		step("/props", o.llamaCpp(ctx, root, &caps))
	}
	if len(caps.Sources) == 0 && !answered {
		return caps, fmt.Errorf("probe %s: %w (%w): %w", base, ErrNoAnswer, ErrNoServer, errors.Join(errs...))
	}
	if len(caps.Sources) == 0 {
		return caps, fmt.Errorf("probe %s: %w: %w", base, ErrNoAnswer, errors.Join(errs...))
	}
	return caps, nil
}

// models reads GET {base}/models.
func (o Options) models(ctx context.Context, base string, caps *Capabilities) error {
	b, err := o.get(ctx, http.MethodGet, base+"/models", nil)
	if err != nil {
		return err
	}
	return readModels(b, o.Model, caps)
}

// readModels reads a /models answer into caps.
func readModels(b []byte, model string, caps *Capabilities) error {
	var v struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int64  `json:"max_model_len"`
			Meta        *struct {
				NCtxTrain int64 `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	if err := decode(b, &v); err != nil {
		return err
	}
	for _, m := range v.Data {
		switch {
		case m.OwnedBy == "vllm":
			caps.Server = ServerVLLM
		case m.OwnedBy == "llamacpp" || m.Meta != nil:
			caps.Server = ServerLlamaCpp
		}
		if m.ID != model && len(v.Data) > 1 {
			continue
		}
		caps.Listed = caps.Listed || m.ID == model
		if n, ok := contextLen(m.MaxModelLen); ok {
			caps.ContextTokens = n
		}
		if m.Meta != nil {
			if n, ok := contextLen(m.Meta.NCtxTrain); ok {
				caps.TrainedContext = n
			}
		}
	}
	return nil
}

// ollama reads POST {root}/api/show.
func (o Options) ollama(ctx context.Context, root string, caps *Capabilities) error {
	b, err := o.get(ctx, http.MethodPost, root+"/api/show", map[string]string{"model": o.Model})
	if err != nil {
		return err
	}
	return readOllama(b, caps)
}

// readOllama reads an /api/show answer into caps.
func readOllama(b []byte, caps *Capabilities) error {
	var v struct {
		Capabilities []string       `json:"capabilities"`
		Parameters   string         `json:"parameters"`
		ModelInfo    map[string]any `json:"model_info"`
		Details      *struct {
			Family string `json:"family"`
		} `json:"details"`
	}
	if err := decode(b, &v); err != nil {
		return err
	}
	if v.Details == nil && v.ModelInfo == nil && v.Capabilities == nil {
		return errors.New("not an Ollama model description")
	}
	caps.Server = ServerOllama
	for k, val := range v.ModelInfo {
		if f, ok := val.(float64); ok && strings.HasSuffix(k, ".context_length") && f > 0 && f <= MaxContext {
			caps.TrainedContext = int(f)
		}
	}
	caps.ContextTokens = OllamaDefaultContext
	for _, line := range strings.Split(v.Parameters, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				if n, ok := contextLen(n); ok {
					caps.ContextTokens = n
				}
			}
		}
	}
	if caps.TrainedContext > 0 && caps.ContextTokens > caps.TrainedContext {
		caps.ContextTokens = caps.TrainedContext
	}
	if v.Capabilities != nil {
		caps.Tools = ToolsNone
		for _, c := range v.Capabilities {
			switch c {
			case "tools":
				caps.Tools = ToolsNative
			case "vision":
				caps.Vision = true
			}
		}
	}
	return nil
}

// llamaCpp reads GET {root}/props.
func (o Options) llamaCpp(ctx context.Context, root string, caps *Capabilities) error {
	b, err := o.get(ctx, http.MethodGet, root+"/props", nil)
	if err != nil {
		return err
	}
	return readLlamaCpp(b, caps)
}

// readLlamaCpp reads a /props answer into caps.
func readLlamaCpp(b []byte, caps *Capabilities) error {
	var v struct {
		Settings *struct {
			NCtx int64 `json:"n_ctx"`
		} `json:"default_generation_settings"`
		NCtx         int64   `json:"n_ctx"`
		ChatTemplate *string `json:"chat_template"`
		TemplateCaps *struct {
			SupportsToolCalls *bool `json:"supports_tool_calls"`
		} `json:"chat_template_caps"`
		Modalities *struct {
			Vision bool `json:"vision"`
		} `json:"modalities"`
	}
	if err := decode(b, &v); err != nil {
		return err
	}
	if v.Settings == nil && v.ChatTemplate == nil {
		return errors.New("not llama.cpp server properties")
	}
	caps.Server = ServerLlamaCpp
	n, ok := 0, false
	if v.Settings != nil {
		n, ok = contextLen(v.Settings.NCtx)
	}
	if !ok {
		n, ok = contextLen(v.NCtx)
	}
	if ok {
		caps.ContextTokens = n
	}
	caps.Vision = v.Modalities != nil && v.Modalities.Vision
	switch {
	case v.TemplateCaps != nil && v.TemplateCaps.SupportsToolCalls != nil:
		caps.Tools = ToolsNone
		if *v.TemplateCaps.SupportsToolCalls {
			caps.Tools = ToolsNative
		}
	case v.ChatTemplate != nil && *v.ChatTemplate != "":
		// A template that never mentions tools drops them: the model
		// would never see what it is offered.
		caps.Tools = ToolsNone
		if strings.Contains(*v.ChatTemplate, "tool") {
			caps.Tools = ToolsNative
		}
	}
	return nil
}

// contextLen is a context length the server reported, when it is one
// (above 0 and at most MaxContext).
func contextLen(n int64) (int, bool) {
	if n <= 0 || n > MaxContext {
		return 0, false
	}
	return int(n), true
}

// decode decodes a JSON answer into v.
func decode(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("answer is not the expected JSON: %w", err)
	}
	return nil
}

// get sends one probe request and returns its 2xx answer. A redirect is
// not followed: it fails the step, as any other answer would, and sends
// the key nowhere else.
func (o Options) get(ctx context.Context, method, url string, body any) ([]byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	cl := *o.Client
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := cl.Do(req)
	if err != nil {
		return nil, noServer{err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("answer larger than %d bytes", MaxBody)
	}
	return b, nil
}

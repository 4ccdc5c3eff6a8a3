// Package budget fits requests into a model's context window before they
// are sent. A small local model often has 2,048 to 8,192 tokens of
// context; a long conversation with many tool schemas exceeds it, and the
// server then refuses the request (llama.cpp, vLLM) or, worse, silently
// cuts its beginning, system prompt and tools first (Ollama).
//
// Sizes are estimated, not tokenized: one token per BytesPerToken bytes of
// text, plus PerMessage tokens for each message and PerTool for each tool.
// BPE tokenizers average 3.5 to 4.5 bytes per token on English and JSON,
// so the estimate errs on the large side.
//
// An image counts PerImage tokens plus one per ImageBytesPerToken bytes of
// its base64. What an image really costs depends on the model, not on its
// bytes: Anthropic charges at most about 1,600 tokens, OpenAI about 1,100
// in high detail, Gemma 3 256, LLaVA 576 to 2,880, and Qwen2.5-VL grows
// with the resolution (about 1,300 for 1024×1024). The size term makes a
// large image, which is likely of a high resolution, count more.
//
// When a request does not fit, Fit changes it in this order, stopping as
// soon as it fits:
//
//  0. Drop images, oldest first: each becomes a note in its message's
//     text. Images go before any text does.
//  1. Drop the oldest exchanges of the history (a user message and the
//     answers, tool calls and tool results that follow it, so that a call
//     is never separated from its result). The system prompt, system
//     messages and the latest user message with everything after it are
//     never dropped. The system prompt gets a note saying how many
//     messages were left out.
//  2. Shorten tool descriptions to their first sentence and drop the
//     descriptions inside parameter schemas; then drop tool descriptions.
//  3. Cut the longest tool results of the current turn, keeping their
//     beginning and saying how much was cut.
//
// A request that still does not fit fails with a bad_request error and is
// not sent.
package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Estimate constants; see the package documentation.
const (
	BytesPerToken = 3
	PerMessage    = 8
	PerTool       = 16
	// PerRequest covers the chat template's fixed text and, in prompt tool
	// mode, the instructions around the tool list.
	PerRequest = 200
	// PerImage and ImageBytesPerToken estimate an image (see the package
	// documentation).
	PerImage           = 1600
	ImageBytesPerToken = 256
	// MaxReserve caps the tokens kept free for the answer when the request
	// sets no MaxTokens (a quarter of the context, at most this).
	MaxReserve = 1024
)

// Log keys.
const (
	logContext   = "context_tokens"
	logBefore    = "estimate_before"
	logAfter     = "estimate_after"
	logDropped   = "dropped_messages"
	logShortened = "tools_shortened"
	logCut       = "results_cut"
	logImages    = "images_dropped"
	logModel     = "model"
)

// Estimate is the estimated prompt size of req in tokens.
func Estimate(req llm.Request) int {
	n := PerRequest + len(req.System)/BytesPerToken
	for _, m := range req.Messages {
		n += messageTokens(m)
	}
	for _, t := range req.Tools {
		n += toolTokens(t)
	}
	return n
}

func messageTokens(m llm.Message) int {
	b := len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		b += len(c.ID) + len(c.Name) + len(c.Arguments) + 16
	}
	n := PerMessage + b/BytesPerToken
	for _, p := range m.Parts {
		// Content already holds the text of the parts.
		if p.Type == llm.PartImage {
			n += PerImage + len(p.Data)/ImageBytesPerToken
		}
	}
	return n
}

func toolTokens(t llm.ToolDef) int {
	b, err := json.Marshal(t)
	if err != nil {
		return PerTool + (len(t.Name)+len(t.Description))/BytesPerToken
	}
	return PerTool + len(b)/BytesPerToken
}

// Provider fits each request into a context window before passing it on.
//
// # Concurrency
//
// Safe for concurrent use when the wrapped provider is; SetContextTokens
// may be called at any time (probing learns the window after start).
type Provider struct {
	next   llm.Provider
	tokens atomic.Int64
	log    *slog.Logger
}

var _ llm.Provider = (*Provider)(nil)

// Wrap returns next with a context window of contextTokens; 0 means
// unknown, and requests pass unchanged until SetContextTokens is called.
// logger may be nil.
func Wrap(next llm.Provider, contextTokens int, logger *slog.Logger) *Provider {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Provider{next: next, log: logger}
	p.SetContextTokens(contextTokens)
	return p
}

// SetContextTokens sets the window for later calls; 0 disables trimming.
func (p *Provider) SetContextTokens(n int) { p.tokens.Store(int64(max(n, 0))) }

// ContextTokens reports the window; 0 when unknown.
func (p *Provider) ContextTokens() int { return int(p.tokens.Load()) }

// Name is the wrapped provider's name.
func (p *Provider) Name() string { return p.next.Name() }

// Complete fits req into the window and passes it on.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	n := p.ContextTokens()
	if n == 0 {
		return p.next.Complete(ctx, req)
	}
	fitted, rep, err := Fit(req, n)
	if err != nil {
		return llm.Response{}, &llm.Error{Kind: llm.KindBadRequest, Provider: p.next.Name(), Model: req.Model, Message: err.Error()}
	}
	if rep.Changed() {
		p.log.Info("llm request trimmed to fit the context window", logModel, req.Model, logContext, n, logBefore, rep.Before, logAfter, rep.After,
			logImages, rep.ImagesDropped, logDropped, rep.DroppedMessages, logShortened, rep.ToolsShortened, logCut, rep.ResultsCut)
	}
	return p.next.Complete(ctx, fitted)
}

// Report says what Fit changed.
type Report struct {
	// Before and After are the estimates in tokens.
	Before, After int
	// ImagesDropped counts images replaced by notes.
	ImagesDropped int
	// DroppedMessages counts history messages left out.
	DroppedMessages int
	// ToolsShortened is 1 when descriptions were shortened, 2 when dropped.
	ToolsShortened int
	// ResultsCut counts tool results of the current turn that were cut.
	ResultsCut int
}

// Changed reports whether Fit changed the request.
func (r Report) Changed() bool {
	return r.ImagesDropped > 0 || r.DroppedMessages > 0 || r.ToolsShortened > 0 || r.ResultsCut > 0
}

// Limit is the prompt budget of a request in a window of contextTokens:
// the window less the answer's MaxTokens, or less a quarter of the window
// (at most MaxReserve) when the request sets none.
func Limit(req llm.Request, contextTokens int) int {
	reserve := req.MaxTokens
	if reserve <= 0 {
		reserve = min(MaxReserve, contextTokens/4)
	}
	return contextTokens - reserve
}

// Fit returns req changed as little as needed to fit contextTokens (see
// the package documentation), or an error when it cannot. req itself is
// not modified.
func Fit(req llm.Request, contextTokens int) (llm.Request, Report, error) {
	limit := Limit(req, contextTokens)
	rep := Report{Before: Estimate(req)}
	rep.After = rep.Before
	if rep.Before <= limit {
		return req, rep, nil
	}
	out := req
	fits := func(msgs []llm.Message) bool {
		r := out
		r.Messages = msgs
		return Estimate(r) <= limit
	}
	out.Messages, rep.ImagesDropped = dropImages(out.Messages, fits)
	if fits(out.Messages) {
		rep.After = Estimate(out)
		return out, rep, nil
	}
	out.Messages, rep.DroppedMessages = dropHistory(out.Messages, func(msgs []llm.Message) bool {
		r := out
		r.Messages = msgs
		return Estimate(r) <= limit
	})
	if rep.DroppedMessages > 0 {
		out.System = withNote(req.System, rep.DroppedMessages)
	}
	if Estimate(out) > limit && len(out.Tools) > 0 {
		out.Tools = shortenTools(out.Tools, false)
		rep.ToolsShortened = 1
		if Estimate(out) > limit {
			out.Tools = shortenTools(out.Tools, true)
			rep.ToolsShortened = 2
		}
	}
	if over := Estimate(out) - limit; over > 0 {
		out.Messages, rep.ResultsCut = cutResults(out.Messages, over*BytesPerToken)
	}
	rep.After = Estimate(out)
	if rep.After > limit {
		return req, rep, fmt.Errorf("the request needs about %d tokens but the model's context of %d tokens leaves %d for it, even without older history, tool descriptions and with tool results cut; shorten the system prompt, offer fewer tools or raise context_tokens",
			rep.After, contextTokens, limit)
	}
	return out, rep, nil
}

// withNote appends to the system prompt how much history was left out. It
// goes into the system prompt rather than a message of its own because
// some chat templates (Mistral's, Gemma's) refuse two user messages in a
// row.
func withNote(system string, dropped int) string {
	note := fmt.Sprintf("[Note: %d earlier messages of this conversation were left out to fit the model's context window.]", dropped)
	if system == "" {
		return note
	}
	return system + "\n\n" + note
}

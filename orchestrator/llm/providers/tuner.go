package providers

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/budget"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/images"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/probe"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/textcalls"
	"github.com/evoclaw/evoclaw/orchestrator/llm/resilient"
)

// Log keys of probing and tuning.
const (
	logModel          = "model"
	logServer         = "server"
	logListed         = "listed"
	logContextTokens  = "context_tokens"
	logTrainedContext = "trained_context"
	logTools          = "tools"
	logSources        = "sources"
	logToolMode       = "tool_mode"
	logTextToolCalls  = "text_tool_calls"
	logVision         = "vision"
	logImages         = "images"
	logErr            = "err"
)

// tuner holds one model's local-model settings: what the configuration
// says, and what probing the server adds where the configuration is
// silent. An explicit setting always wins.
type tuner struct {
	e        llm.Endpoint
	model    string
	apiKey   string
	client   *http.Client
	log      *slog.Logger
	text     *textcalls.Provider
	budget   *budget.Provider
	images   *images.Provider
	provider llm.Provider
	// link is the model's index in the chain; warmup asks for a warm-up
	// request at start.
	link   int
	warmup bool
	// watching is set while recheck runs; wake cuts its wait short;
	// reprobe0 is its first wait (DefaultReprobe); lookup resolves host
	// names (net.DefaultResolver).
	watching atomic.Bool
	wake     chan struct{}
	reprobe0 time.Duration
	lookup   func(ctx context.Context, host string) ([]string, error)
}

func newTuner(e llm.Endpoint, model, apiKey string, p llm.Provider, client *http.Client, logger *slog.Logger) *tuner {
	t := &tuner{e: e, model: model, apiKey: apiKey, client: client, log: logger.With(logModel, model), wake: make(chan struct{}, 1),
		reprobe0: DefaultReprobe, lookup: net.DefaultResolver.LookupHost}
	t.text = textcalls.Wrap(p, textcalls.Settings{})
	t.budget = budget.Wrap(t.text, e.ContextTokens, t.log)
	// Images are decided first, so that the budget counts only the images
	// that are sent.
	t.images = images.Wrap(t.budget, images.Settings{}, t.log)
	t.provider = t.images
	t.apply(nil)
	return t
}

// apply sets the tool mode and context window from the configuration and,
// when not nil, what the server said.
func (t *tuner) apply(caps *probe.Capabilities) {
	s := textcalls.Settings{Recover: t.e.RecoverTextCalls(t.apiKey != "")}
	switch t.e.ToolMode {
	case llm.ToolModePrompt:
		s.Prompt = true
	case llm.Auto:
		s.Prompt = caps != nil && caps.Tools == probe.ToolsNone
	}
	t.text.Set(s)
	vision := caps != nil && caps.Vision
	sendImages := t.e.SendsImages(vision)
	t.images.Set(images.Settings{Send: sendImages, Limits: t.e.ImageLimits()})
	if t.e.ContextTokens == 0 && caps != nil && caps.ContextTokens > 0 {
		t.budget.SetContextTokens(caps.ContextTokens)
	}
	if caps != nil || s.Recover || s.Prompt || t.e.ContextTokens > 0 {
		mode := llm.ToolModeNative
		if s.Prompt {
			mode = llm.ToolModePrompt
		}
		t.log.Info("llm tool settings", logToolMode, mode, logTextToolCalls, s.Recover || s.Prompt, logContextTokens, t.budget.ContextTokens(),
			logImages, sendImages)
	}
}

// start launches probing and warm-up in the chain's background.
func (t *tuner) start(chain *resilient.Chain) {
	t.reprobe(chain)
	if host := hostName(t.e.BaseURL, t.client); host != "" && !t.watched() {
		chain.Go(t.recheck(chain, t.nameCheck(host), false))
	}
	if t.warmup {
		chain.Go(func(ctx context.Context) {
			if err := chain.WarmUp(ctx, t.link); err != nil && ctx.Err() == nil {
				t.log.Warn("llm warm-up failed", logErr, err)
			}
		})
	}
}

// reprobe probes at start and again after the server came back
// (resilient.Link.OnWarm): a watched server until it answers, a hosted
// API asked to be probed once, marking nothing.
func (t *tuner) reprobe(chain *resilient.Chain) {
	switch {
	case chain == nil || !t.e.Probes():
	case t.watched():
		chain.Go(t.recheck(chain, t.probeCheck, true))
	default:
		chain.Go(func(ctx context.Context) { t.probeCheck(ctx, 0) })
	}
}

// watched reports whether the server is probed until it answers: a local
// base URL that is probed (reach.go); others get a look-up of their host
// name instead.
func (t *tuner) watched() bool { return t.e.Probes() && llm.IsLocalURL(t.e.BaseURL) }

// probe asks the server about the model, bounded by probe_timeout, and
// applies the answer. A server that answers nothing changes nothing; the
// error says why (probeCheck logs it).
func (t *tuner) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.e.ProbeTimeout.Duration)
	defer cancel()
	caps, err := probe.Probe(ctx, probe.Options{BaseURL: t.e.BaseURL, Model: t.model, APIKey: t.apiKey, Client: t.client})
	if err != nil {
		return err
	}
	t.log.Info("llm capabilities", logServer, caps.Server, logListed, caps.Listed, logContextTokens, caps.ContextTokens,
		logTrainedContext, caps.TrainedContext, logTools, caps.Tools, logVision, caps.Vision, logSources, caps.Sources)
	t.apply(&caps)
	return nil
}

// Package images decides what a model gets of the images in a request
// (llm.Message.Parts): for a model that takes images, each image within
// the endpoint's limits, and a text note instead of each image over them;
// for a text-only model, every message as its text (llm.Message.Content),
// so no image ever reaches a server that would refuse the request.
package images

import (
	"context"
	"log/slog"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/tunable"
)

// Log keys.
const (
	logModel    = "model"
	logReplaced = "images_replaced"
)

// Settings say what a Provider sends. The zero value sends no images.
type Settings struct {
	// Send passes images on, bounded by Limits; false sends every message
	// as its text.
	Send bool
	// Limits bound the images sent (zero fields: the llm defaults).
	Limits llm.ImageLimits
}

// Provider wraps an llm.Provider with Settings, which may change while it
// runs (probing learns whether a local model takes images).
//
// # Concurrency
//
// Safe for concurrent use when the wrapped provider is; Set may be called
// at any time and applies to calls that start afterwards.
type Provider struct {
	tunable.Wrapper[Settings]
	log *slog.Logger
}

var _ llm.Provider = (*Provider)(nil)

// Wrap returns next with settings s. logger may be nil.
func Wrap(next llm.Provider, s Settings, logger *slog.Logger) *Provider {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Provider{log: logger}
	p.Init(next, s)
	return p
}

// Complete passes req on with its images as the settings say.
func (p *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	s := p.Settings()
	if !s.Send {
		return p.Next().Complete(ctx, llm.TextOnly(req))
	}
	out, n := llm.LimitImages(req, s.Limits)
	if n > 0 {
		p.log.Info("llm request images replaced by notes", logModel, req.Model, logReplaced, n)
	}
	return p.Next().Complete(ctx, out)
}

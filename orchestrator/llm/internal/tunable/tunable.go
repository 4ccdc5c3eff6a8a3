// Package tunable holds what the providers that wrap another one with
// settings share (textcalls, images): the wrapped provider, whose name they
// answer to, and settings that capability probing may replace while calls
// run.
package tunable

import (
	"sync/atomic"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Wrapper is embedded in a wrapping llm.Provider, which brings Complete.
// Init it before use.
//
// # Concurrency
//
// Set may be called at any time and applies to calls that start
// afterwards: a call reads Settings once.
type Wrapper[S any] struct {
	next llm.Provider
	s    atomic.Pointer[S]
}

// Init sets the wrapped provider and the first settings.
func (w *Wrapper[S]) Init(next llm.Provider, s S) {
	w.next = next
	w.s.Store(&s)
}

// Set replaces the settings for later calls.
func (w *Wrapper[S]) Set(s S) { w.s.Store(&s) }

// Settings reports the current settings.
func (w *Wrapper[S]) Settings() S { return *w.s.Load() }

// Name is the wrapped provider's name.
func (w *Wrapper[S]) Name() string { return w.next.Name() }

// Next is the wrapped provider.
func (w *Wrapper[S]) Next() llm.Provider { return w.next }

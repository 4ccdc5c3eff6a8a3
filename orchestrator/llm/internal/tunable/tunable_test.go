package tunable

import (
	"context"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// named is a provider that only has a name.
type named string

func (n named) Name() string { return string(n) }
func (named) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, nil
}

// A Wrapper answers to the wrapped provider's name and reports the settings
// set last, also while other goroutines set and read them (run with -race).
func TestWrapper(t *testing.T) {
	var w Wrapper[int]
	w.Init(named("local"), 1)
	if w.Name() != "local" || w.Next() != named("local") || w.Settings() != 1 {
		t.Fatalf("after Init: name %q, next %v, settings %d", w.Name(), w.Next(), w.Settings())
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			w.Set(10 + i)
			_ = w.Settings()
		})
	}
	wg.Wait()
	if s := w.Settings(); s < 10 || s > 13 {
		t.Fatalf("settings %d after four concurrent Sets of 10 to 13", s)
	}
	w.Set(7)
	if s := w.Settings(); s != 7 {
		t.Fatalf("settings %d after Set(7)", s)
	}
}

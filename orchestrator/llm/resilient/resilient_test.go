package resilient

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// fake is a provider made of a function.
type fake struct {
	name  string
	calls atomic.Int64
	fn    func(ctx context.Context, req llm.Request) (llm.Response, error)
}

func (f *fake) Name() string { return f.name }
func (f *fake) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	f.calls.Add(1)
	return f.fn(ctx, req)
}

// answers returns a fake that fails with errs in turn, then answers.
func answers(name string, errs ...error) *fake {
	var mu sync.Mutex
	return &fake{name: name, fn: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) > 0 {
			err := errs[0]
			errs = errs[1:]
			return llm.Response{}, err
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok from " + req.Model}, Model: req.Model}, nil
	}}
}

func httpErr(status int, retryAfter time.Duration) error {
	return &llm.Error{Kind: llm.KindForStatus(status), Provider: "p", Status: status, RetryAfter: retryAfter}
}

// clock is a fake clock whose Sleep advances it and records the waits.
type clock struct {
	mu    sync.Mutex // guards now and waits
	now   time.Time
	waits []time.Duration
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *clock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

func opts(c *clock) Options {
	return Options{Now: c.Now, Sleep: c.Sleep, Jitter: func() float64 { return 1 }, Backoff: time.Second, MaxBackoff: 4 * time.Second}
}

func TestRetryThenSuccess(t *testing.T) {
	clk := newClock()
	p := answers("p", httpErr(500, 0), httpErr(502, 0), httpErr(503, 0))
	c, err := New([]Link{{Provider: p, Model: "m", Retries: 3}}, opts(clk))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Complete(context.Background(), llm.Request{Model: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Message.Content != "ok from m" || r.Attempts != 4 || r.Provider != "p" {
		t.Fatalf("r = %+v", r)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	if got := clk.slept(); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("waits = %v, want %v", got, want)
	}
}

func TestBackoffJitterAndCap(t *testing.T) {
	c, _ := New([]Link{{Provider: answers("p")}}, Options{Backoff: time.Second, MaxBackoff: 5 * time.Second, Jitter: func() float64 { return 0 }})
	for attempt, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2500 * time.Millisecond, 2500 * time.Millisecond} {
		if got := c.backoff(attempt); got != want {
			t.Errorf("backoff(%d) = %v, want %v", attempt, got, want)
		}
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	clk := newClock()
	p := answers("p", httpErr(429, 7*time.Second))
	c, _ := New([]Link{{Provider: p, Retries: 2}}, opts(clk))
	r, err := c.Complete(context.Background(), llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := clk.slept(); len(got) != 1 || got[0] != 7*time.Second || r.Attempts != 2 {
		t.Fatalf("waits = %v attempts %d", got, r.Attempts)
	}
}

func TestNotRetried(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		clk := newClock()
		p := answers("p", httpErr(status, 0))
		c, _ := New([]Link{{Provider: p, Retries: 3}}, opts(clk))
		_, err := c.Complete(context.Background(), llm.Request{})
		var e *llm.Error
		if !errors.As(err, &e) || e.Status != status || p.calls.Load() != 1 || len(clk.slept()) != 0 {
			t.Errorf("status %d: err %v, %d calls, waits %v", status, err, p.calls.Load(), clk.slept())
		}
	}
	for _, status := range []int{408, 409, 429, 500, 503} {
		p := answers("p", httpErr(status, 0))
		c, _ := New([]Link{{Provider: p, Retries: 1}}, opts(newClock()))
		if _, err := c.Complete(context.Background(), llm.Request{}); err != nil || p.calls.Load() != 2 {
			t.Errorf("status %d: err %v, %d calls, want a retry", status, err, p.calls.Load())
		}
	}
}

func TestFallbackAfterRetries(t *testing.T) {
	clk := newClock()
	primary := answers("local", httpErr(500, 0), httpErr(500, 0), httpErr(500, 0))
	backup := answers("hosted")
	o := opts(clk)
	var seen []Attempt
	o.OnAttempt = func(a Attempt) { seen = append(seen, a) }
	c, _ := New([]Link{{Provider: primary, Model: "big", Retries: 2}, {Provider: backup, Model: "small"}}, o)
	r, err := c.Complete(context.Background(), llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Fatalf("attempts seen: %+v", seen)
	}
	for i, want := range []Attempt{{Provider: "local", Model: "big", Try: 1, Kind: llm.KindServer, Status: 500},
		{Provider: "local", Model: "big", Try: 2, Kind: llm.KindServer, Status: 500},
		{Provider: "local", Model: "big", Try: 3, Kind: llm.KindServer, Status: 500},
		{Provider: "hosted", Model: "small", Try: 1}} {
		got := seen[i]
		if got.Provider != want.Provider || got.Model != want.Model || got.Try != want.Try || got.Kind != want.Kind || got.Status != want.Status || (got.Err == nil) != (want.Kind == "") {
			t.Errorf("attempt %d = %+v, want %+v", i+1, got, want)
		}
	}
	if r.Message.Content != "ok from small" || r.Provider != "hosted" || r.Attempts != 4 || primary.calls.Load() != 3 {
		t.Fatalf("r = %+v, primary calls %d", r, primary.calls.Load())
	}
}

func TestLongRetryAfterFallsBack(t *testing.T) {
	clk := newClock()
	primary := answers("p", httpErr(429, time.Hour))
	c, _ := New([]Link{{Provider: primary, Retries: 5}, {Provider: answers("q")}}, opts(clk))
	r, err := c.Complete(context.Background(), llm.Request{})
	if err != nil || r.Provider != "q" || len(clk.slept()) != 0 {
		t.Fatalf("r = %+v err %v waits %v", r, err, clk.slept())
	}
	// The 429 cools the primary until its Retry-After.
	h := c.Health()
	if !h[0].CoolingUntil.Equal(clk.Now().Add(time.Hour)) || h[0].LastKind != llm.KindRateLimited {
		t.Fatalf("health = %+v", h[0])
	}
}

// TestRateLimitCooldownBounded: a 429's Retry-After cools its link at most
// MaxRateLimitCooldown (one "until 2100" skipped the first model until
// restart).
func TestRateLimitCooldownBounded(t *testing.T) {
	for _, tc := range []struct {
		retryAfter, cooling time.Duration
	}{
		{30 * time.Minute, 30 * time.Minute},
		{MaxRateLimitCooldown, MaxRateLimitCooldown},
		{2 * time.Hour, MaxRateLimitCooldown},
		{74 * 365 * 24 * time.Hour, MaxRateLimitCooldown},
	} {
		clk := newClock()
		c, _ := New([]Link{{Provider: answers("p", httpErr(429, tc.retryAfter))}, {Provider: answers("q")}}, opts(clk))
		if r, err := c.Complete(context.Background(), llm.Request{}); err != nil || r.Provider != "q" {
			t.Fatalf("Retry-After %v: r = %+v err %v", tc.retryAfter, r, err)
		}
		if h := c.Health()[0]; !h.CoolingUntil.Equal(clk.Now().Add(tc.cooling)) {
			t.Errorf("Retry-After %v: cooling until %v, want %v", tc.retryAfter, h.CoolingUntil, clk.Now().Add(tc.cooling))
		}
		clk.advance(tc.cooling)
		if r, err := c.Complete(context.Background(), llm.Request{}); err != nil || r.Provider != "p" {
			t.Errorf("Retry-After %v: after %v r = %+v err %v, want the first link again", tc.retryAfter, tc.cooling, r, err)
		}
	}
}

func TestRetryNotBeyondDeadline(t *testing.T) {
	clk := &clock{now: time.Now()} // the context's deadline runs on the real clock
	p := answers("p", httpErr(429, 30*time.Second))
	c, _ := New([]Link{{Provider: p, Retries: 5}}, opts(clk))
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(10*time.Second))
	defer cancel()
	_, err := c.Complete(ctx, llm.Request{})
	if llm.KindOf(err) != llm.KindRateLimited || len(clk.slept()) != 0 {
		t.Fatalf("err %v waits %v", err, clk.slept())
	}
}

func TestCooldownSkipsThenRetries(t *testing.T) {
	clk := newClock()
	down := errors.New("connection refused")
	netErr := &llm.Error{Kind: llm.KindNetwork, Provider: "p", Err: down}
	primary := answers("p", netErr, netErr, netErr, netErr)
	backup := answers("q")
	o := opts(clk)
	o.FailureThreshold, o.Cooldown = 3, time.Minute
	c, _ := New([]Link{{Provider: primary}, {Provider: backup}}, o)
	for i := 0; i < 3; i++ {
		if r, err := c.Complete(context.Background(), llm.Request{}); err != nil || r.Provider != "q" {
			t.Fatalf("call %d: %+v %v", i, r, err)
		}
	}
	if primary.calls.Load() != 3 {
		t.Fatalf("primary calls %d", primary.calls.Load())
	}
	// Cooling: the primary is skipped.
	if _, err := c.Complete(context.Background(), llm.Request{}); err != nil || primary.calls.Load() != 3 {
		t.Fatalf("cooling link was called: %d calls, err %v", primary.calls.Load(), err)
	}
	if h := c.Health()[0]; h.ConsecutiveFailures != 3 || h.CoolingUntil.IsZero() || h.LastKind != llm.KindNetwork {
		t.Fatalf("health = %+v", h)
	}
	// After the cool-down it is tried again, fails once more, cools again.
	clk.advance(time.Minute + time.Second)
	if _, err := c.Complete(context.Background(), llm.Request{}); err != nil || primary.calls.Load() != 4 {
		t.Fatalf("after cool-down: %d calls, err %v", primary.calls.Load(), err)
	}
	if c.Health()[0].CoolingUntil.IsZero() {
		t.Fatal("a failure after the cool-down must cool the link again")
	}
	// Then it recovers: the next try after the cool-down succeeds and clears it.
	clk.advance(time.Minute + time.Second)
	r, err := c.Complete(context.Background(), llm.Request{})
	if err != nil || r.Provider != "p" {
		t.Fatalf("recovered: %+v %v", r, err)
	}
	if h := c.Health()[0]; h.ConsecutiveFailures != 0 || !h.CoolingUntil.IsZero() {
		t.Fatalf("health after success = %+v", h)
	}
}

func TestAllCoolingStillTried(t *testing.T) {
	clk := newClock()
	netErr := &llm.Error{Kind: llm.KindNetwork, Provider: "p"}
	p := answers("p", netErr, netErr)
	o := opts(clk)
	o.FailureThreshold = 1
	c, _ := New([]Link{{Provider: p}}, o)
	if _, err := c.Complete(context.Background(), llm.Request{}); llm.KindOf(err) != llm.KindNetwork {
		t.Fatalf("first: %v", err)
	}
	if _, err := c.Complete(context.Background(), llm.Request{}); llm.KindOf(err) != llm.KindNetwork || p.calls.Load() != 2 {
		t.Fatalf("the only link must be tried while cooling: %d calls, %v", p.calls.Load(), err)
	}
	if r, err := c.Complete(context.Background(), llm.Request{}); err != nil || r.Provider != "p" {
		t.Fatalf("third: %v", err)
	}
}

func TestBadRequestDoesNotHurtHealth(t *testing.T) {
	p := answers("p", httpErr(400, 0), httpErr(400, 0), httpErr(400, 0))
	o := opts(newClock())
	o.FailureThreshold = 1
	c, _ := New([]Link{{Provider: p}}, o)
	for i := 0; i < 3; i++ {
		c.Complete(context.Background(), llm.Request{})
	}
	if h := c.Health()[0]; h.ConsecutiveFailures != 0 || !h.CoolingUntil.IsZero() {
		t.Fatalf("health = %+v", h)
	}
}

func TestAllFailNamesEveryLink(t *testing.T) {
	c, _ := New([]Link{{Provider: answers("a", httpErr(401, 0)), Model: "x"}, {Provider: answers("b", httpErr(503, 0)), Model: "y"}}, opts(newClock()))
	_, err := c.Complete(context.Background(), llm.Request{})
	if llm.KindOf(err) != llm.KindServer || !strings.Contains(err.Error(), "a:x: auth") || !strings.Contains(err.Error(), "b:y: server") {
		t.Fatalf("err = %v", err)
	}
	if c.Name() != "a:x -> b:y" {
		t.Fatalf("name %q", c.Name())
	}
}

func TestPerCallTimeout(t *testing.T) {
	// In a synctest bubble the ten-minute timeout passes at once.
	synctest.Test(t, func(t *testing.T) {
		hang := &fake{name: "slow", fn: func(ctx context.Context, req llm.Request) (llm.Response, error) {
			<-ctx.Done()
			return llm.Response{}, &llm.Error{Kind: llm.KindOf(ctx.Err()), Provider: "slow", Err: ctx.Err()}
		}}
		start := time.Now()
		c, _ := New([]Link{{Provider: hang, Timeout: 10 * time.Minute, Retries: 3}, {Provider: answers("q")}}, Options{})
		r, err := c.Complete(context.Background(), llm.Request{})
		if err != nil || r.Provider != "q" || hang.calls.Load() != 1 {
			t.Fatalf("r %+v err %v calls %d (a timeout moves on without retrying)", r, err, hang.calls.Load())
		}
		if waited := time.Since(start); waited != 10*time.Minute {
			t.Fatalf("moved on after %v, want the 10m timeout", waited)
		}
		if h := c.Health()[0]; h.LastKind != llm.KindTimeout || !strings.Contains(h.LastError, "per-call timeout 10m0s") {
			t.Fatalf("health = %+v", h)
		}
	})
}

func TestCallerCancelStopsEverything(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	first := &fake{name: "p", fn: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		cancel()
		return llm.Response{}, &llm.Error{Kind: llm.KindCanceled, Provider: "p", Err: context.Canceled}
	}}
	second := answers("q")
	c, _ := New([]Link{{Provider: first, Retries: 3}, {Provider: second}}, Options{})
	_, err := c.Complete(ctx, llm.Request{})
	if llm.KindOf(err) != llm.KindCanceled || second.calls.Load() != 0 || first.calls.Load() != 1 {
		t.Fatalf("err %v, calls %d/%d", err, first.calls.Load(), second.calls.Load())
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := answers("p", httpErr(503, 0))
		// The real sleep: the chain would wait an hour before retrying.
		c, _ := New([]Link{{Provider: p, Retries: 3}}, Options{Backoff: time.Hour, MaxBackoff: time.Hour, Jitter: func() float64 { return 1 }})
		done := make(chan error, 1)
		go func() {
			_, err := c.Complete(ctx, llm.Request{})
			done <- err
		}()
		synctest.Wait() // the chain is asleep in its backoff
		start := time.Now()
		cancel()
		err := <-done
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != llm.KindCanceled || !errors.As(e.Err, &e) || e.Status != 503 || p.calls.Load() != 1 {
			t.Fatalf("err %v calls %d", err, p.calls.Load())
		}
		if time.Since(start) != 0 {
			t.Fatalf("returned %v after cancel", time.Since(start))
		}
	})
}

func TestNewRejects(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Fatal("empty chain accepted")
	}
	if _, err := New([]Link{{}}, Options{}); err == nil {
		t.Fatal("link without provider accepted")
	}
}

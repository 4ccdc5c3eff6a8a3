package gittools

import (
	"context"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// A git call that ignores its context is answered at the deadline; calls
// left running are bounded, then the tool is busy until they end.
func TestDeadlineOfAStuckCall(t *testing.T) {
	release := make(chan struct{})
	stuck := func(ctx context.Context, _ map[string]any) skills.Output {
		<-release // ignores ctx, as go-git's status of a huge tree does
		return skills.Output{Content: []skills.Block{skills.TextBlock("done")}}
	}
	sem := make(chan struct{}, maxRunning)
	run := deadlined(sem, "git_status", stuck)
	for i := range maxRunning {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		start := time.Now()
		out := run(ctx, nil)
		cancel()
		if out.ErrorType() != wire.ErrTimeout {
			t.Fatalf("call %d: %+v, want a timeout", i, out)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("call %d answered after %v", i, took)
		}
	}
	if out := run(context.Background(), nil); out.ErrorType() != wire.ErrBusy {
		t.Fatalf("with %d calls stuck: %+v, want busy", maxRunning, out)
	}
	close(release)
	quick := deadlined(sem, "git_log", func(context.Context, map[string]any) skills.Output {
		return skills.Output{Content: []skills.Block{skills.TextBlock("log")}}
	})
	testenv.Eventually(t, 5*time.Second, func() bool {
		out := quick(context.Background(), nil)
		return out.Succeeded() && out.Text() == "log"
	}, "the stuck calls' slots given back once they ended")
	panics := deadlined(make(chan struct{}, 1), "git_commit", func(context.Context, map[string]any) skills.Output { panic("bug") })
	if out := panics(context.Background(), nil); out.ErrorType() != wire.ErrInternal {
		t.Fatalf("a panic: %+v", out)
	}
}

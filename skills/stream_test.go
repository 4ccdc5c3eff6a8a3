//go:build linux

package skills

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/proc"
)

// streamed collects what an OutputFunc saw, per stream.
type streamed struct {
	mu  sync.Mutex // guards out
	out map[proc.Stream]string
}

func (s *streamed) f(st proc.Stream, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		s.out = map[proc.Stream]string{}
	}
	s.out[st] += string(p)
}

func TestExecuteStreamsOutput(t *testing.T) {
	tool := scriptTool(t, "echo one; echo two >&2; echo three", 0o755)
	var got streamed
	out := flatExecute(WithOutput(context.Background(), got.f), tool, nil, ExecOptions{})
	if out.Status != wire.StatusSuccess || out.Result != "one\nthree\n" {
		t.Fatalf("outcome %+v", out)
	}
	if got.out[proc.Stdout] != "one\nthree\n" || got.out[proc.Stderr] != "two\n" {
		t.Fatalf("streamed %q", got.out)
	}
	// Without an OutputFunc nothing changes.
	if out := flatExecute(context.Background(), tool, nil, ExecOptions{}); out.Result != "one\nthree\n" {
		t.Fatalf("outcome without streaming %+v", out)
	}
	if StreamOf(context.Background()) != nil || StreamOf(WithOutput(context.Background(), nil)) != nil {
		t.Fatal("StreamOf of a context without a func is not nil")
	}
}

func TestToolsetCallStreamsGoTools(t *testing.T) {
	set := NewToolset(nil, ExecOptions{})
	if err := set.Add(GoTool{Tool: Tool{Name: "echo"}, Run: func(ctx context.Context, _ map[string]any) Output {
		if f := StreamOf(ctx); f != nil {
			f(proc.Stdout, []byte("live"))
		}
		return Output{Content: []Block{TextBlock("done")}}
	}}); err != nil {
		t.Fatal(err)
	}
	var got streamed
	out := set.Call(WithOutput(context.Background(), got.f), "echo", nil)
	if !strings.Contains(out.Text(), "done") || got.out[proc.Stdout] != "live" {
		t.Fatalf("output %q streamed %q", out.Text(), got.out)
	}
}

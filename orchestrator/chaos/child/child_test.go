package child

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestReadyLineStdinAndStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start("echoer", "/bin/sh", []string{"-c", `echo starting; echo "ready at here"; while read l; do echo "got $l"; done`}, Options{Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	line, err := p.WaitReady(ctx)
	if err != nil || line != "ready at here" {
		t.Fatalf("WaitReady = %q, %v", line, err)
	}
	if p.ReadyAfter() <= 0 || p.Pid() <= 0 {
		t.Fatalf("ready after %v, pid %d", p.ReadyAfter(), p.Pid())
	}
	if _, err := p.Stdin().Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-p.Lines():
		if l != "got one" {
			t.Fatalf("line %q, want the echo of stdin", l)
		}
	case <-ctx.Done():
		t.Fatal("no line after the ready line")
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-p.Lines(); ok {
		t.Fatal("Lines open after Stop")
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestExitBeforeReadyAndKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start("quitter", "/bin/sh", []string{"-c", "echo not yet; exit 3"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitReady(ctx); err == nil || !strings.Contains(err.Error(), "quitter exited before it was ready: exit status 3") {
		t.Fatalf("WaitReady = %v", err)
	}
	q, err := Start("sleeper", "/bin/sh", []string{"-c", "echo ready $CHILD_TEST; exec sleep 60"}, Options{Env: []string{"CHILD_TEST=with-env"}})
	if err != nil {
		t.Fatal(err)
	}
	if line, err := q.WaitReady(ctx); err != nil || line != "ready with-env" {
		t.Fatalf("WaitReady = %q, %v: want the variable added to the environment", line, err)
	}
	if err := q.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := Start("missing", "/nonexistent/evoclaw", nil, Options{}); err == nil || !strings.Contains(err.Error(), "start missing") {
		t.Fatalf("Start of a missing binary = %v", err)
	}
}

package actors

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/murmur3"
)

// TestMain runs every test of the package with the ids a 32-bit platform
// needs, so the salted names are exercised on the machine that runs CI.
func TestMain(m *testing.M) {
	safeIDs = true
	os.Exit(m.Run())
}

// convPath is the actor id of conversation id's actor.
func convPath(id string) string {
	parent := safeName("", "conversations")
	return parent + "/" + safeName(parent, "conv-"+id)
}

func TestSafeNameKeepsTheRegistryIndexNonNegative(t *testing.T) {
	salted := 0
	for i := range 2000 {
		for _, parent := range []string{"", "conversations", "edges/edge-pi-1"} {
			base := fmt.Sprintf("call-%d", i)
			n := safeName(parent, base)
			id := n
			if parent != "" {
				id = parent + "/" + n
			}
			// What the registry computes on a 32-bit platform.
			if idx := int32(murmur3.Sum32([]byte(id))) % 1024; idx < 0 {
				t.Fatalf("id %q gives bucket %d", id, idx)
			}
			if n != base {
				salted++
			}
		}
	}
	// About half of all names need a salt: the check above is not vacuous.
	if salted < 1000 {
		t.Fatalf("only %d of 6000 names were salted", salted)
	}
}

func TestAskAndStopAndWait(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	echo, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if s, ok := c.Message().(string); ok {
			c.Respond("re: " + s)
		}
	}), safeName("", "echo"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Ask(sys.Root, echo, "hi", 5*time.Second)
	if err != nil || got != "re: hi" {
		t.Fatalf("Ask = %v, %v", got, err)
	}
	silent, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), safeName("", "silent"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Ask(sys.Root, silent, "hi", 50*time.Millisecond); !errors.Is(err, ErrAskTimeout) {
		t.Fatalf("Ask of a silent actor: %v, want ErrAskTimeout", err)
	}
	if err := StopAndWait(sys.Root, echo, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := sys.ProcessRegistry.Get(echo); ok {
		t.Fatal("actor still registered after StopAndWait")
	}
	// Stopping what is already gone returns at once.
	if err := StopAndWait(sys.Root, echo, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// askLater starts an Ask now and returns the function that waits for it.
func askLater(root *actor.RootContext, pid *actor.PID, msg any, timeout time.Duration) func() (any, error) {
	type result struct {
		v   any
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := Ask(root, pid, msg, timeout)
		ch <- result{v, err}
	}()
	return func() (any, error) {
		r := <-ch
		return r.v, r.err
	}
}

// inbox spawns an actor with a safe id that hands every user message it
// receives to the returned channel.
func inbox(t *testing.T, sys *actor.ActorSystem) (*actor.PID, <-chan any) {
	t.Helper()
	ch := make(chan any, 16)
	pid, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case actor.SystemMessage, actor.AutoReceiveMessage:
		default:
			ch <- c.Message()
		}
	}), safeName("", fmt.Sprintf("inbox-%d", askSeq.Add(1))))
	if err != nil {
		t.Fatal(err)
	}
	return pid, ch
}

// receive waits for one message from an inbox.
func receive(t *testing.T, ch <-chan any, d time.Duration) any {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(d):
		t.Fatalf("nothing received within %s", d)
		return nil
	}
}

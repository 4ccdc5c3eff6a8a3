package actors

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/murmur3"
)

// protoactor-go's process registry picks a bucket for an actor id with
// int(murmur3(id)) % 1024 (actor/process_registry.go). On 32-bit platforms
// (armv6 and armv7 Raspberry Pi OS images) int(uint32) is negative for half
// of all ids and the registry panics with "index out of range" (upstream
// issue 755, open). Every id this project creates is therefore chosen so
// that its hash is below 2^31: safeName salts a name until it is, and Ask and
// StopAndWait replace RequestFuture and PoisonFuture, whose ids
// ("future$N") we cannot choose. The ids of the actor system itself
// ("deadletter", "eventstream") hash below 2^31.

// safeIDs is true where the registry needs safe ids; tests force it on.
var safeIDs = strconv.IntSize == 32

// safeName returns name, or name with a "~N" suffix, such that the id of a
// child of parentID (parentID + "/" + name; name alone under the root) is
// safe for the registry. On 64-bit platforms it returns name unchanged.
func safeName(parentID, name string) string {
	if !safeIDs {
		return name
	}
	prefix := ""
	if parentID != "" {
		prefix = parentID + "/"
	}
	n := name
	for i := 1; murmur3.Sum32([]byte(prefix+n)) >= 1<<31; i++ {
		n = name + "~" + strconv.Itoa(i)
	}
	return n
}

// ErrAskTimeout is returned by Ask when no reply came in time.
var ErrAskTimeout = errors.New("no reply in time")

var askSeq atomic.Uint64

// Ask sends msg to pid with a one-shot reply actor as its sender and waits
// for the first reply, like RootContext.RequestFuture but with an id that is
// safe on 32-bit platforms.
func Ask(root *actor.RootContext, pid *actor.PID, msg any, timeout time.Duration) (any, error) {
	reply := make(chan any, 1)
	props := actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.Started:
			c.Request(pid, msg)
		case actor.SystemMessage, actor.AutoReceiveMessage:
		default:
			select {
			case reply <- m:
			default:
			}
			c.Stop(c.Self())
		}
	})
	asker, err := root.SpawnNamed(props, safeName("", fmt.Sprintf("ask-%d", askSeq.Add(1))))
	if err != nil {
		return nil, fmt.Errorf("ask: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-reply:
		return m, nil
	case <-t.C:
		root.Stop(asker)
		return nil, fmt.Errorf("ask %s: %w within %s", pid.Id, ErrAskTimeout, timeout)
	}
}

// StopAndWait poisons pid (it stops after the messages already in its
// mailbox) and waits until it and its children have stopped, or timeout:
// PoisonFuture with an id that is safe on 32-bit platforms.
func StopAndWait(root *actor.RootContext, pid *actor.PID, timeout time.Duration) error {
	done := make(chan struct{})
	props := actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.Started:
			c.Watch(pid)
			c.Poison(pid)
		case *actor.Terminated:
			if m.Who.Equal(pid) {
				close(done)
				c.Stop(c.Self())
			}
		}
	})
	watcher, err := root.SpawnNamed(props, safeName("", fmt.Sprintf("stop-%d", askSeq.Add(1))))
	if err != nil {
		return fmt.Errorf("stop %s: %w", pid.Id, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		root.Stop(watcher)
		return fmt.Errorf("stop %s: not stopped within %s", pid.Id, timeout)
	}
}

package actors

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// sendEvery sends msg to pid through root every d until the returned func
// is called; after it returns, at most a send already under way happens.
// It stands in for protoactor's TimerScheduler.SendRepeatedly, whose timer
// reads its cancel state without synchronisation: a data race whenever an
// actor stops (and cancels) while its timer fires, as forgotten edge agents
// do (forget.go). No lock is held while sending: a send blocks while pid's
// bounded mailbox is full, and stop is called from pid's own Receive.
func sendEvery(root *actor.RootContext, d time.Duration, pid *actor.PID, msg any) (stop func()) {
	var (
		stopped atomic.Bool
		mu      sync.Mutex // guards t
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(d, func() {
		if stopped.Load() {
			return
		}
		root.Send(pid, msg)
		mu.Lock()
		defer mu.Unlock()
		if !stopped.Load() {
			t.Reset(d)
		}
	})
	return func() {
		stopped.Store(true)
		mu.Lock()
		defer mu.Unlock()
		t.Stop()
	}
}

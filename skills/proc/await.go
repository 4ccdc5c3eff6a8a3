package proc

import (
	"context"
	"time"
)

// Await waits for exited to deliver the end of a process. When timeout
// passes or ctx ends first, it calls kill and still waits for exited, so
// that the process is reaped before the caller reports it; timedOut or
// stopped says which came first. Run waits with it, as do backends that
// run a command elsewhere (over SSH) with their own exit and kill.
func Await(ctx context.Context, exited <-chan error, timeout time.Duration, kill func()) (err error, timedOut, stopped bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-exited:
		return err, false, false
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		stopped = true
	}
	kill()
	return <-exited, timedOut, stopped
}

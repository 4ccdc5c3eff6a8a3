package proc

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Await reports how the wait ended, kills only when the process did not end
// first, and always returns what exited delivered: after a kill, the exit
// the kill caused.
func TestAwait(t *testing.T) {
	exitErr := errors.New("exit status 3")
	killedErr := errors.New("signal: killed")
	for _, tc := range []struct {
		name              string
		exitAt, cancelAt  time.Duration // 0: never
		timeout           time.Duration
		want              error
		timedOut, stopped bool
		killed            bool
	}{
		{"exits first", time.Second, 0, time.Minute, exitErr, false, false, false},
		{"timeout first", time.Hour, 0, time.Minute, killedErr, true, false, true},
		{"ctx ends first", time.Hour, 2 * time.Second, time.Minute, killedErr, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				exited := make(chan error, 1)
				exit := time.AfterFunc(tc.exitAt, func() { exited <- exitErr })
				killed := false
				kill := func() {
					killed = true
					if exit.Stop() {
						exited <- killedErr
					}
				}
				err, timedOut, stopped := Await(ctx, exited, tc.timeout, kill)
				if err != tc.want || timedOut != tc.timedOut || stopped != tc.stopped || killed != tc.killed {
					t.Fatalf("Await = %v, timed out %v, stopped %v, killed %v; want %v, %v, %v, %v",
						err, timedOut, stopped, killed, tc.want, tc.timedOut, tc.stopped, tc.killed)
				}
			})
		})
	}
}

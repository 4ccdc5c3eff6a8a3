package mcptools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// TestServerEndSaysWhy: a stdio server that exits at its start, or in the
// middle of a call, is reported with its exit status and the end of its
// standard error, which says why ("can't open file"), on one line and
// within stderrKept bytes. Before, its standard error went nowhere and
// the error said only "calling \"initialize\": client is closing: EOF" or
// "calling \"tools/call\": EOF".
func TestServerEndSaysWhy(t *testing.T) {
	t.Run("at its start", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			pad  int // bytes of standard error before the message
		}{{"short", 0}, {"long", 5 * stderrKept}} {
			t.Run(tc.name, func(t *testing.T) {
				_, errs := connectHostile(t, "die", fmt.Sprint(tc.pad), "fatal: no\x1b[31m config")
				if len(errs) != 1 {
					t.Fatalf("errors %v, want one", errs)
				}
				msg := errs[0].Error()
				want := "(it ended: exit status 3; its standard error ends: "
				if !strings.Contains(msg, want) || !strings.Contains(msg, "fatal: no[31m config)") {
					t.Fatalf("error %q, want one with %q and the message without its control character", msg, want)
				}
				if tail := msg[strings.Index(msg, want):]; len(tail) > len(want)+stderrKept {
					t.Errorf("the standard error's end is %d bytes, want at most %d", len(tail)-len(want), stderrKept)
				}
			})
		}
	})
	t.Run("in a call", func(t *testing.T) {
		set, errs := connectHostile(t, "diecall", "panic: the sensor is gone")
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		tools, _ := set.Tools()
		out := tools[0].Run(context.Background(), nil)
		want := "(it ended: exit status 4; its standard error ends: panic: the sensor is gone)"
		if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), want) {
			t.Fatalf("error %q (%s), want execution_failed with %q", out.ErrorText(), out.ErrorType(), want)
		}
	})
}

// TestStderrReadIsPaced: a standard error written as fast as a process
// can is read at about stderrRate, not as fast as it comes (which cost the
// agent 77% of a core), and only its end is kept.
func TestStderrReadIsPaced(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	tail := readTail(r)
	chunk := []byte(strings.Repeat("flood\n", 10<<10))
	var written int64
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for {
			n, err := w.Write(chunk)
			written += int64(n)
			if err != nil {
				return
			}
		}
	}()
	const d = 500 * time.Millisecond
	time.Sleep(d) // the flood runs for d: what is read in that time is measured
	w.SetWriteDeadline(time.Now())
	<-wrote
	w.Close()
	r.Close()
	<-tail.done
	limit := int64(float64(stderrRate)*d.Seconds()*1.5) + 2*64<<10
	if written > limit {
		t.Errorf("%d bytes read in %v, want at most %d (%d a second)", written, d, limit, stderrRate)
	}
	if written < 64<<10 {
		t.Errorf("%d bytes read in %v: reading stalled", written, d)
	}
	// The last write may have been cut anywhere.
	if got := tail.String(); len(got) > stderrKept || !strings.Contains(got[max(len(got)-20, 0):], "flood / flo") {
		t.Errorf("kept %d bytes ending %q, want at most %d ending with the last lines", len(got), got[max(len(got)-20, 0):], stderrKept)
	}
}

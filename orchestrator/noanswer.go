package orchestrator

import (
	"errors"
	"fmt"
	"time"

	"github.com/evoclaw/evoclaw/actors"
)

// noAnswer is the error of chat id that had no answer within timeout (err
// says so): it names the part of that time the chat waited behind another
// chat of its conversation, and a chat that never started.
func noAnswer(id string, timeout time.Duration, w *actors.QueueWait, err error) error {
	within := roundWait(timeout)
	if errors.Is(err, actors.ErrAskTimeout) {
		// Ask's error repeats the time this message gives.
		err = actors.ErrAskTimeout
	}
	waited, started := w.Started()
	switch {
	case !started && w.Behind():
		return fmt.Errorf("chat %s: no answer within %s: it never started, waiting all that time behind another chat of the conversation: %w",
			id, within, err)
	case !started:
		return fmt.Errorf("chat %s: no answer within %s: it never started, waiting all that time for the conversation's history to load: %w",
			id, within, err)
	case w.Behind():
		return fmt.Errorf("chat %s: no answer within %s, %s of it spent waiting behind another chat of the conversation: %w",
			id, within, roundWait(waited), err)
	}
	return fmt.Errorf("chat %s: no answer within %s: %w", id, within, err)
}

// roundWait rounds d for a message: to the millisecond under a second, else
// to the tenth of a second.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

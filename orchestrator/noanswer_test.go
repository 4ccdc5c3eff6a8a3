package orchestrator

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
)

// TestNoAnswerSaysItOnce: the 504 message of a chat without an answer says
// how long once, where the chat waited, and keeps the cause for errors.Is.
// Before, an ask's timeout repeated the time ("no answer within 5s: ask
// conversations: no reply in time within 5s").
func TestNoAnswerSaysItOnce(t *testing.T) {
	askErr := fmt.Errorf("ask conversations: %w within 5s", actors.ErrAskTimeout)
	notStarted := &actors.QueueWait{}
	for _, tt := range []struct {
		name string
		w    *actors.QueueWait
		want string
	}{
		{"no queue", nil, "chat c: no answer within 5s: no reply in time"},
		{"never started", notStarted, "chat c: no answer within 5s: it never started"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := noAnswer("c", 5*time.Second, tt.w, askErr)
			if !strings.HasPrefix(err.Error(), tt.want) || strings.Count(err.Error(), "5s") != 1 || !errors.Is(err, actors.ErrAskTimeout) {
				t.Fatalf("%q, want it to start %q, name 5s once and wrap ErrAskTimeout", err, tt.want)
			}
		})
	}
	other := errors.New("conversation stopped")
	if err := noAnswer("c", 300*time.Millisecond, nil, other); err.Error() != "chat c: no answer within 300ms: conversation stopped" {
		t.Fatalf("other cause: %q", err)
	}
}

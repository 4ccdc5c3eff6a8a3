package mcptools

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// stderrKept is how much of the end of a stdio server's standard error is
// kept, to say why it ended: a server that fails at its start ("cannot
// find module", "can't open file") says so there, and the SDK sees only
// that its output ended.
const stderrKept = 1 << 10

// stderrRate bounds how fast a server's standard error is read, in bytes
// a second: read as fast as it comes, a server that floods it (a debug
// loop, "yes >&2") cost the agent 77% of a core to read and throw away;
// paced, a server writing faster waits for the pipe as it would for a
// slow terminal.
const stderrRate = 4 << 20

// stderrTail keeps the last stderrKept bytes of a server's standard
// error, read from its own pipe at most stderrRate bytes a second.
// Reading ends at the end of the pipe (the server and all it started are
// gone) or when the pipe is closed.
type stderrTail struct {
	done chan struct{} // closed when reading ended

	mu   sync.Mutex // guards buf
	buf  []byte
	more bool // bytes before buf were dropped
}

// readTail reads r into a new tail until r ends or is closed.
func readTail(r *os.File) *stderrTail {
	t := &stderrTail{done: make(chan struct{})}
	go func() {
		defer close(t.done)
		b := make([]byte, 64<<10)
		for {
			n, err := r.Read(b)
			t.add(b[:n])
			if err != nil {
				return
			}
			// Pacing, not waiting for an event: what a read costs in time
			// at stderrRate (16 ms for a full buffer).
			time.Sleep(time.Duration(n) * time.Second / stderrRate)
		}
	}()
	return t
}

func (t *stderrTail) add(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - stderrKept; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.more = true
	}
}

// String is the kept end, on one line of at most stderrKept bytes:
// newlines become " / ", other control characters and invalid UTF-8 are
// left out.
func (t *stderrTail) String() string {
	t.mu.Lock()
	s, more := string(t.buf), t.more
	t.mu.Unlock()
	s = strings.ToValidUTF8(s, "")
	if more { // the first bytes may be the middle of a line, or of a rune
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i, l := range lines {
		lines[i] = strings.TrimSpace(strings.Map(func(r rune) rune {
			if unicode.IsControl(r) && r != '\t' {
				return -1
			}
			return r
		}, l))
	}
	lines = slices.DeleteFunc(lines, func(l string) bool { return l == "" })
	s = strings.Join(lines, " / ")
	if len(s) > stderrKept { // the separators are longer than the newlines
		s = strings.ToValidUTF8(s[len(s)-stderrKept:], "")
	}
	return s
}

// ended says how a server that exited with waitErr ended, and what its
// standard error ended with, for an error message.
func ended(waitErr error, tail *stderrTail) string {
	s := "it exited with status 0"
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		s = "it ended: " + ee.Error()
	case waitErr != nil:
		s = "it ended: " + waitErr.Error()
	}
	if tail != nil {
		if t := tail.String(); t != "" {
			s += "; its standard error ends: " + t
		}
	}
	return s
}

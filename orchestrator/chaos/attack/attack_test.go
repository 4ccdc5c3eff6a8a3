//go:build linux

package attack

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/evoclaw/evoclaw/cmd/evoclaw/evoclawtest"
	"github.com/evoclaw/evoclaw/skills/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.ActAsProbe()
	code := m.Run()
	evoclawtest.Cleanup()
	os.Exit(code)
}

// tally counts the attempts of one class and how many held.
type tally struct {
	class    string
	attempts int
	held     int
	// boundary is false for a class that is reported, not asserted.
	boundary bool
	failures []string
}

// try records one attempt: held says whether the defence held, what
// names the attempt in the report when it did not.
func (c *tally) try(held bool, what string) {
	c.attempts++
	if held {
		c.held++
	} else {
		c.failures = append(c.failures, what)
	}
}

// board is the table of the run, one tally per class, in order.
type board struct {
	mu      sync.Mutex // guards tallies
	tallies []*tally
}

func (b *board) class(name string, boundary bool) *tally {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &tally{class: name, boundary: boundary}
	b.tallies = append(b.tallies, c)
	return c
}

func (b *board) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	fmt.Fprintf(&s, "%-34s %8s %5s  %s\n", "class", "attempts", "held", "verdict")
	for _, c := range b.tallies {
		verdict := "holds"
		switch {
		case !c.boundary:
			verdict = "reported only (speed bump, not a boundary)"
		case c.attempts == 0:
			verdict = "NOT RUN"
		case c.held < c.attempts:
			verdict = "BROKEN: " + strings.Join(c.failures, "; ")
		}
		fmt.Fprintf(&s, "%-34s %8d %5d  %s\n", c.class, c.attempts, c.held, verdict)
	}
	return s.String()
}

// TestAttackSet runs every class and fails if a class that must hold did
// not, or did not run.
func TestAttackSet(t *testing.T) {
	b := &board{}
	t.Run("sandbox-escape", func(t *testing.T) { sandboxEscapes(t, b) })
	t.Run("builtin-wedge", func(t *testing.T) { builtinWedges(t, b) })
	t.Run("broker", func(t *testing.T) { brokerAttacks(t, b) })
	t.Run("audit-forgery", func(t *testing.T) { auditForgeries(t, b) })
	t.Run("orphan-tools", func(t *testing.T) { orphanTools(t, b) })
	t.Run("shell-guard", func(t *testing.T) { shellGuard(t, b) })
	t.Run("delegation", func(t *testing.T) { delegationAttacks(t, b) })
	t.Run("audit-sql", func(t *testing.T) { auditSQLBombs(t, b) })
	t.Logf("attack set:\n%s", b)
	for _, c := range b.tallies {
		if c.boundary && (c.attempts == 0 || c.held < c.attempts) {
			t.Errorf("class %s: %d of %d attempts held", c.class, c.held, c.attempts)
		}
	}
}

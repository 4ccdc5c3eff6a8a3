//go:build unix

package main

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// hostileName is a tool name as a model may write it: an OSC that sets the
// terminal's title, one that writes its clipboard, a screen clear and a
// right-to-left override that shows "gnp.exe" as "exe.png".
const hostileName = "evil\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\u202egnp.exe"

// TestLogsEscapedOnATerminal: `evoclaw logs` shows records escaped on a
// terminal, so a tool name or message a model wrote cannot drive it, and
// writes them as they are to a pipe. It printed them raw before.
func TestLogsEscapedOnATerminal(t *testing.T) {
	dir := t.TempDir()
	s, err := sqlite.Open(filepath.Join(dir, orchestrator.AuditFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := persistence.ToolCall{Node: "n1", Side: persistence.SideOrchestrator, Tool: hostileName, Status: persistence.StatusError}
	if err := s.RecordToolCall(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(evoclawBinary(t), "logs", "--data-dir", dir, "--filter=tool")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out testenv.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&out, tty) // ends with EIO when the process exits
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("logs on a terminal: %v\n%q", err, out.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("logs on a terminal did not end")
	}
	<-copied
	shown := out.String()
	if !strings.Contains(shown, "evil") {
		t.Fatalf("the record is not shown: %q", shown)
	}
	for _, raw := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(shown, raw) {
			t.Errorf("the terminal got %q raw: %q", raw, shown)
		}
	}
	for _, esc := range []string{`\x1b]0;pwned\x07`, `\u202e`} {
		if !strings.Contains(shown, esc) {
			t.Errorf("the terminal does not show %s: %q", esc, shown)
		}
	}

	// To a pipe the record is written as it is.
	code, piped, errOut := runArgs("logs", "--data-dir", dir, "--filter=tool")
	if code != 0 || !strings.Contains(piped, hostileName) {
		t.Fatalf("to a pipe: exit %d %q %s", code, piped, errOut)
	}
}

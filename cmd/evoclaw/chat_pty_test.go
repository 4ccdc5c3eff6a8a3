//go:build unix

package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// ptyChat is `evoclaw chat` running in a pseudo-terminal.
type ptyChat struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	out  *testenv.Buffer // everything the process wrote to the terminal
	done chan error      // the process's exit
	// mark is where in out the next expect looks from.
	mark int
}

func startPTYChat(t *testing.T, cache string, args ...string) *ptyChat {
	t.Helper()
	cmd := exec.Command(evoclawBinary(t), append([]string{"chat"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "HOME="+cache, "NO_COLOR=", "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	p := &ptyChat{t: t, cmd: cmd, tty: tty, out: &testenv.Buffer{}, done: make(chan error, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(p.out, tty) // ends with EIO when the process exits
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		tty.Close()
		<-copied
		if t.Failed() {
			t.Logf("terminal:\n%q", p.out.String())
		}
	})
	return p
}

// expect waits until s appears after the last expectation met.
func (p *ptyChat) expect(s string) {
	p.t.Helper()
	testenv.Eventually(p.t, 20*time.Second, func() bool {
		i := strings.Index(p.out.String()[p.mark:], s)
		if i < 0 {
			return false
		}
		p.mark += i + len(s)
		return true
	}, "the terminal to show "+strings.TrimSpace(s))

}

func (p *ptyChat) typeText(s string) {
	p.t.Helper()
	if _, err := p.tty.WriteString(s); err != nil {
		p.t.Fatal(err)
	}
}

// The REPL on a terminal: a question shows live progress and its answer,
// the prompt names the conversation, Ctrl-C cancels a slow chat (the node
// sees the request go) and returns to the prompt, Ctrl-C at the prompt
// does not leave, /new forgets the conversation, Ctrl-D exits 0, and the
// history file is private.
func TestChatREPLInPTY(t *testing.T) {
	f := newFakeNode(t)
	cache := t.TempDir()
	p := startPTYChat(t, cache, "--data-dir", f.dir)
	p.expect("(answers: chain)") // who answers, from the node's status
	p.expect("evoclaw> ")
	p.typeText("How is pi1?\r")
	p.expect("→ pi1 sysinfo {\"x\":1}")
	p.expect("    reading /proc")
	p.expect("✓\x1b[0m pi1 sysinfo 12 ms")
	p.expect("answer 1: pi1 is fine (How is pi1?)")
	p.expect("evoclaw [conv-1]> ")

	p.typeText("slow one\r")
	p.expect("→ pi1 hang")
	testenv.Eventually(t, 20*time.Second, func() bool { r, _ := f.counts(); return r == 1 }, "the slow chat to reach the node")
	p.typeText("\x03") // Ctrl-C: SIGINT, the terminal is not in raw mode while a chat runs
	p.expect("chat cancelled")
	p.expect("evoclaw [conv-1]> ")
	testenv.Eventually(t, 20*time.Second, func() bool { _, c := f.counts(); return c == 1 }, "the node to see the chat cancelled")

	p.typeText("\x03") // Ctrl-C at the prompt
	p.expect("Ctrl-D or /quit to leave")
	p.expect("evoclaw [conv-1]> ")
	p.typeText("/new\r")
	p.expect("evoclaw> ")
	p.typeText("again\r")
	p.expect("(again)")
	if got := f.conversations(); len(got) != 3 || got[1] != "conv-1" || got[2] != "" {
		t.Fatalf("conversations sent %q", got)
	}
	p.typeText("\x04") // Ctrl-D
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Ctrl-D did not end the REPL")
	}
	if !strings.Contains(p.out.String(), "\x1b[") {
		t.Fatalf("no colours on a terminal")
	}

	path := filepath.Join(cache, chatHistoryFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || string(b) != "How is pi1?\nslow one\n/new\nagain\n" {
		t.Fatalf("history %v %q", fi.Mode(), b)
	}

	// the next session has the history: arrow up recalls the last line
	p = startPTYChat(t, cache, "--data-dir", f.dir, "--conversation", "kept")
	p.expect("evoclaw [kept]> ")
	p.typeText("\x1b[A\r")
	p.expect("(again)")
	p.typeText("/quit\r")
	if err := <-p.done; err != nil {
		t.Fatalf("/quit: %v", err)
	}
}

// Ctrl-C during a one-shot chat ends it with exit status 130, after the
// request is closed.
func TestChatOneShotInterruptExits130(t *testing.T) {
	f := newFakeNode(t)
	cmd := exec.Command(evoclawBinary(t), "chat", "--data-dir", f.dir, "slow")
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, func() bool { r, _ := f.counts(); return r == 1 }, "the slow chat to reach the node")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130; stderr %q", err, stderr.String())
	}
	testenv.Eventually(t, 20*time.Second, func() bool { _, c := f.counts(); return c == 1 }, "the node to see the chat cancelled")
}

// Ctrl-C or Ctrl-D at the prompt for a reply to the model's question
// cancels the chat, as Ctrl-C does anywhere else: a one-shot chat exits
// 130, the REPL returns to its prompt. At that prompt the terminal is raw
// and sends no SIGINT; the chat once went on waiting for the reply (a
// one-shot chat until the question timed out, minutes later), and Ctrl-D
// (end of input) did so still after Ctrl-C was fixed.
func TestChatCtrlCAtQuestionPrompt(t *testing.T) {
	dir := startAskingNode(t)
	for _, tc := range []struct {
		name string
		key  string // typed at the answer> prompt
		args []string
		// after is what the terminal shows once the chat is cancelled.
		after string
		code  int
	}{
		{"one-shot Ctrl-C", "\x03", []string{"--data-dir", dir, "fill the tank"}, "evoclaw: interrupted", 130},
		{"repl Ctrl-C", "\x03", []string{"--data-dir", dir}, "evoclaw [", 0},
		{"one-shot Ctrl-D", "\x04", []string{"--data-dir", dir, "fill the tank"}, "evoclaw: interrupted", 130},
		{"repl Ctrl-D", "\x04", []string{"--data-dir", dir}, "evoclaw [", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPTYChat(t, t.TempDir(), tc.args...)
			repl := strings.HasPrefix(tc.name, "repl")
			if repl {
				p.expect("evoclaw> ")
				p.typeText("fill the tank\r")
			}
			// in bold: it waits for the person, unlike the dim progress
			p.expect("\x1b[1m? which tank?\x1b[0m")
			p.expect("answer> ")
			p.typeText(tc.key)
			p.expect("^" + string(rune('@'+tc.key[0])) + ": chat cancelled")
			p.expect(tc.after)
			if repl {
				// the REPL still reads and answers
				p.typeText("/help\r")
				p.expect("/new    start a new conversation")
				p.typeText("\x04")
			}
			select {
			case err := <-p.done:
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != tc.code {
					t.Fatalf("exit %v, want %d", err, tc.code)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the chat did not end")
			}
		})
	}
}

// Lines pasted into the REPL are one question, sent with Enter, whether
// the terminal brackets the paste or not; they were once a chat each. A
// history file with a line longer than the line editor reads (a long
// question kept by an older version) loses only that line: it once lost
// the lines after it.
func TestChatREPLPasteInPTY(t *testing.T) {
	f := newFakeNode(t)
	cache := t.TempDir()
	path := filepath.Join(cache, chatHistoryFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, path, "old one\n"+strings.Repeat("y", 5000)+"\nnewest\n")
	p := startPTYChat(t, cache, "--data-dir", f.dir)
	p.expect("evoclaw> ")
	p.typeText(pasteStart + "one\ntwo" + pasteEnd)
	p.expect("one␤two")
	p.typeText("\r")
	p.expect("(one\r\ntwo)")
	p.expect("> ")
	p.typeText("alpha\nbeta\r") // one read: a paste the terminal did not bracket
	p.expect("(alpha\r\nbeta)")
	p.expect("> ")
	p.typeText("\x1b[A\x1b[A\x1b[A\r") // back past the two pastes
	p.expect("(newest)")
	p.typeText("/quit\r")
	if err := <-p.done; err != nil {
		t.Fatalf("/quit: %v", err)
	}
	if got := f.conversations(); len(got) != 3 {
		t.Fatalf("%d chats, want 3: %q", len(got), got)
	}
}

// The conversation's id is shown whole, with how to continue it: the REPL
// prompt once cut it at 24 characters, shorter than the node's own ids,
// and a one-shot chat never showed it, so `--conversation ID` had no ID.
func TestChatShowsConversationToContinue(t *testing.T) {
	f := newFakeNode(t)
	long := "conversation-" + strings.Repeat("0123456789", 3)
	p := startPTYChat(t, t.TempDir(), "--data-dir", f.dir, "--conversation", long)
	p.expect("evoclaw [" + long + "]> ")
	p.typeText("/quit\r")
	p.expect("evoclaw chat --conversation " + long + " continues this conversation")
	if err := <-p.done; err != nil {
		t.Fatalf("/quit: %v", err)
	}
	p = startPTYChat(t, t.TempDir(), "--data-dir", f.dir, "hello")
	p.expect("(hello)")
	p.expect("evoclaw chat --conversation conv-")
	if err := <-p.done; err != nil {
		t.Fatalf("one-shot: %v", err)
	}
}

// SIGTERM ends the REPL waiting at its prompt, with the terminal's modes
// restored; it once went on waiting for a line, whatever the signals.
func TestChatREPLEndsOnSIGTERM(t *testing.T) {
	f := newFakeNode(t)
	p := startPTYChat(t, t.TempDir(), "--data-dir", f.dir)
	p.expect("evoclaw> ")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit %v, want status 1", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SIGTERM did not end the REPL")
	}
	p.expect(bracketedPasteOff)
	p.expect("context canceled")
}

// TestChatDropsTypeAheadAtAQuestion: what the person typed while the model
// was thinking (their next message, say) is not the reply to a question
// that came after it: it is dropped, the chat says so, and the reply is
// what they type at the prompt. It was read as the reply, unseen: "yes,
// and empty the other one" answered a question nobody had read.
func TestChatDropsTypeAheadAtAQuestion(t *testing.T) {
	dir := startAskingNodeWith(t, askingProvider{delay: 1500 * time.Millisecond})
	for _, repl := range []bool{false, true} {
		name := "one-shot"
		if repl {
			name = "repl"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"--data-dir", dir}
			if !repl {
				args = append(args, "fill the tank")
			}
			p := startPTYChat(t, t.TempDir(), args...)
			if repl {
				p.expect("evoclaw> ")
				p.typeText("fill the tank\r")
				time.Sleep(300 * time.Millisecond) // typed apart, not pasted with the message
			}
			p.typeText("yes, and empty the other one\r")
			p.expect("? which tank?")
			p.expect("is dropped, not taken as the reply")
			p.expect("answer> ")
			p.typeText("the blue one\r")
			p.expect("filling the blue one")
			if repl {
				p.typeText("\x04")
			}
			select {
			case err := <-p.done:
				if err != nil {
					t.Fatalf("the chat ended with %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the chat did not end")
			}
		})
	}
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"

	"github.com/peterh/liner"
	"golang.org/x/term"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
)

// maxChatLine bounds one line of piped input (a chat body is at most 1 MiB).
const maxChatLine = 1 << 20

// chatHelp is what /help prints.
const chatHelp = `Type a question and press Enter. Tool calls show as they run.
Lines you paste are one question (line breaks show as ␤); Enter sends it.
  /new    start a new conversation
  /quit   leave (or Ctrl-D)
  /help   this text
Ctrl-C cancels the running chat; at the answer> prompt of a question
the model asks, Ctrl-C or Ctrl-D does.`

// chatIO is where a chat command reads and writes, and how it learns of
// Ctrl-C: one value on interrupts per SIGINT (nil: never).
type chatIO struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	interrupts     <-chan os.Signal
}

// cmdChat is `evoclaw chat`: one question, a REPL on a terminal, or one
// chat per line of piped input. It handles Ctrl-C itself: it cancels the
// running chat instead of ending the command.
func cmdChat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	return chatMain(ctx, args, chatIO{stdin: os.Stdin, stdout: stdout, stderr: stderr, interrupts: sig})
}

// chatSession is one run of `evoclaw chat`: the node, the conversation so
// far and how to show it.
type chatSession struct {
	client *nodeClient
	io     chatIO
	view   *chatView
	// conv is the current conversation; empty until the node names one.
	conv string
	// legacyNoted is set once the user was told the node does not stream.
	legacyNoted bool
	// readLine reads the person's reply to a question at a terminal;
	// feed is the input's lines when it is not one. Neither: no input to
	// read a reply from (errNoReply).
	readLine lineReader
	feed     *lineFeed
	// dropTyped drops what was typed at the terminal while a chat ran,
	// before a question's prompt (so that it is not taken for the reply),
	// and says how many bytes it dropped; nil without a terminal.
	dropTyped func() int
}

func chatMain(ctx context.Context, args []string, cio chatIO) error {
	fs := newFlags("chat", cio.stderr)
	var nf nodeFlags
	nf.register(fs)
	conv := fs.String("conversation", "", "continue this conversation (default: the node starts a new one)")
	quiet := fs.Bool("quiet", false, "do not show tool progress (a call waiting for approval is still shown, on stderr)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *conv != "" && wire.ValidateAgentID(*conv) != nil {
		// refused here, as the node would: no request, and no
		// "continues this conversation" for an id no chat can have
		return fmt.Errorf("%w: --conversation %.60q: use letters, digits, '-' and '_', at most %d characters", errUsage, *conv, wire.MaxAgentIDLen)
	}
	client, err := nf.client()
	if err != nil {
		return err
	}
	s := &chatSession{client: client, io: cio, conv: *conv}
	stdinTTY, stdoutTTY, stderrTTY := isTerminal(cio.stdin), isTerminal(cio.stdout), isTerminal(cio.stderr)
	s.view = &chatView{out: cio.stdout, attention: cio.stderr}
	if !*quiet {
		// progress goes beside the answer on a terminal, else to stderr
		// so that stdout holds the answers alone
		s.view.progress, s.view.live = cio.stderr, stderrTTY
		if stdoutTTY {
			s.view.progress, s.view.live = cio.stdout, true
		}
		s.view.color = s.view.live && os.Getenv("NO_COLOR") == ""
	}
	switch {
	case len(pos) > 0:
		return s.oneShot(ctx, strings.Join(pos, " "))
	case stdinTTY && stdoutTTY:
		return s.repl(ctx)
	default:
		// lines from a pipe (or typed with the output redirected): plain
		// output, whatever the terminal
		s.view.color, s.view.live = false, false
		return s.piped(ctx)
	}
}

// oneShot asks one question; Ctrl-C cancels it and exits 130.
func (s *chatSession) oneShot(ctx context.Context, text string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("%w: the question is empty", errUsage)
	}
	// A command of the REPL given as the question was sent to the model.
	switch cmd := strings.TrimSpace(text); cmd {
	case "/help":
		fmt.Fprintln(s.io.stdout, chatHelp)
		return nil
	case "/new", "/quit", "/exit":
		return fmt.Errorf("%w: %s is a command of the terminal chat (evoclaw chat with no question), not a question", errUsage, cmd)
	}
	switch {
	case isTerminal(s.io.stdin) && isTerminal(s.io.stdout):
		// Replies are read as in the REPL: with a prompt, and Ctrl-C at
		// it cancels the chat rather than waiting for a line.
		var ln *liner.State
		defer func() {
			if ln != nil {
				ln.Close()
			}
		}()
		if f, ok := s.io.stdin.(*os.File); ok {
			s.dropTyped = func() int { return flushTyped(f) }
		}
		s.readLine = func(prompt string) (string, error) {
			if ln == nil {
				ln = liner.NewLiner()
				ln.SetCtrlCAborts(true)
			}
			return ln.Prompt(prompt)
		}
	default:
		// a terminal with the output redirected, or input from a pipe or
		// a file: the reply is the next line
		sc := bufio.NewScanner(s.io.stdin)
		sc.Buffer(make([]byte, 4<<10), maxChatLine)
		s.feed = newLineFeed(sc)
	}
	err := s.ask(ctx, text)
	s.noteContinue()
	return err
}

// noteContinue says on stderr how to go on with the conversation, to a
// person at a terminal and to a script alike (stdout holds the answers
// alone): its id is shown nowhere else in full.
func (s *chatSession) noteContinue() {
	if s.conv == "" {
		return
	}
	s.view.note(s.io.stderr, "(evoclaw chat --conversation "+termLine(s.conv, maxPromptID)+" continues this conversation)")
}

// piped asks one question per non-empty line of stdin, in one conversation
// (a new one after /new). A failed chat is reported and the next line
// asked; the command fails at the end if any did. However it ends, the
// conversation's id is said on stderr, as it is before /new forgets it.
func (s *chatSession) piped(ctx context.Context) error {
	defer s.noteContinue()
	sc := bufio.NewScanner(s.io.stdin)
	sc.Buffer(make([]byte, 64<<10), maxChatLine)
	// A question's reply is the next line of input.
	s.feed = newLineFeed(sc)
	failed := 0
	for {
		line, err := s.feed.next(ctx, 0)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return fmt.Errorf("read stdin: %w", err)
		}
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		quit, err := s.handle(ctx, line)
		switch {
		case errors.Is(err, errInterrupted), errors.Is(err, errNoNode), isAuthError(err), isNoModel(err), ctx.Err() != nil:
			return err // the next lines would fail the same way
		case errors.Is(err, errNoReply):
			return err // and there are no next lines
		case err != nil:
			fmt.Fprintln(s.io.stderr, "evoclaw: chat:", err)
			failed++
		}
		if quit {
			return nil
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of the chats failed", failed)
	}
	return nil
}

// handle runs one line of input: a /command or a question. quit is set by
// /quit.
func (s *chatSession) handle(ctx context.Context, line string) (quit bool, err error) {
	switch cmd, _, _ := strings.Cut(line, " "); cmd {
	case "/quit", "/exit":
		return true, nil
	case "/new":
		if s.feed != nil && s.readLine == nil {
			s.noteContinue() // piped: the script's only word of its id
		}
		s.conv = ""
		s.view.note(s.io.stdout, "(a new conversation starts with the next question)")
		return false, nil
	case "/help":
		fmt.Fprintln(s.io.stdout, chatHelp)
		return false, nil
	}
	if strings.HasPrefix(line, "/") && !strings.Contains(strings.Fields(line)[0][1:], "/") {
		fmt.Fprintf(s.io.stdout, "unknown command %s; /help lists them\n", termLine(strings.Fields(line)[0], 40))
		return false, nil
	}
	return false, s.ask(ctx, line)
}

// ask runs one chat, showing its progress and answer. Ctrl-C (a value on
// interrupts) cancels it: errInterrupted.
func (s *chatSession) ask(ctx context.Context, text string) error {
	drainSignals(s.io.interrupts) // a Ctrl-C pressed before this chat is not for it
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, done := make(chan struct{}), make(chan struct{})
	var interrupted atomic.Bool
	go func() {
		defer close(done)
		select {
		case <-s.io.interrupts:
			interrupted.Store(true)
			cancel()
		case <-stop:
		}
	}()
	key := "^C"      // what cancelled the chat, when interrupted
	var noReply bool // the input ended at a question
	ans, err := s.client.chat(cctx, s.conv, text, chatEvents{
		conversation: func(id string) { s.conv = id },
		progress: func(p actors.Progress) {
			switch p.Kind {
			case actors.ProgressApprovalWait:
				s.onApprovalWait(cctx, p)
				return
			case actors.ProgressQuestion:
			default:
				s.view.onProgress(p)
				return
			}
			// Ctrl-C or Ctrl-D at the reply prompt, where the terminal
			// sends no SIGINT: the same as Ctrl-C elsewhere. Input that
			// ended: no reply can come.
			switch ctrl, err := s.onQuestion(cctx, p); {
			case errors.Is(err, errInterrupted):
				key = ctrl
				interrupted.Store(true)
				cancel()
			case errors.Is(err, errNoReply):
				noReply = true
				cancel()
			}
		},
	})
	close(stop)
	<-done
	if interrupted.Load() {
		s.view.note(s.io.stderr, key+": chat cancelled")
		return errInterrupted
	}
	if noReply {
		if s.view.progress != nil {
			s.view.settle()
		}
		return errNoReply
	}
	if err != nil {
		if s.view.progress != nil {
			s.view.settle()
		}
		return err
	}
	if ans.ConversationID != "" {
		s.conv = ans.ConversationID
	}
	if ans.legacy && !s.legacyNoted && s.view.progress != nil {
		s.view.note(s.io.stderr, "(this node does not stream: no live progress)")
		s.legacyNoted = true
	}
	s.view.onAnswer(ans)
	if ans.Limit != "" {
		s.view.note(s.io.stderr, "(the tool loop stopped at a limit: "+termLine(ans.Limit, 200)+")")
	}
	if ans.Error != "" {
		return fmt.Errorf("the chat ended with an error: %s", termLine(ans.Error, 300))
	}
	return nil
}

// isAuthError reports a 401 from the node.
func isAuthError(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusUnauthorized
}

// drainSignals empties ch without blocking.
func drainSignals(ch <-chan os.Signal) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// isTerminal reports whether v is a file that is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

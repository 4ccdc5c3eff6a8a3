package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/peterh/liner"

	"github.com/evoclaw/evoclaw/actors"
)

// maxReplyLine bounds a reply typed to a question (the node takes 4 KiB).
const maxReplyLine = 4 << 10

// lineReader reads one line the person types, showing prompt when it can.
type lineReader func(prompt string) (string, error)

// lineFeed reads the lines of an input that is not a terminal (a pipe, a
// file, a terminal with the output redirected) on a goroutine of its own,
// so that a wait for the next line can end without it: the command's
// context ending (SIGTERM), Ctrl-C, or the question it would reply to
// expiring on the node. A read blocked on input that stays open and silent
// once held the chat for ever, past all three. The goroutine reads at
// most one line ahead; a line nobody waited for is the next wait's.
type lineFeed struct {
	lines chan string   // unbuffered: the reader holds at most one line
	ended chan struct{} // closed when the input ends; err says how
	err   error
}

// errReplyLate ends a wait for a reply that outlived its question.
var errReplyLate = errors.New("no reply before the question expired")

func newLineFeed(sc *bufio.Scanner) *lineFeed {
	f := &lineFeed{lines: make(chan string), ended: make(chan struct{})}
	go func() {
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		f.err = sc.Err()
		if f.err == nil {
			f.err = io.EOF
		}
		close(f.ended)
	}()
	return f
}

// next returns the next line; io.EOF or a read error once the input has
// ended; ctx's error when ctx ends first; errReplyLate after limit when
// limit > 0.
func (f *lineFeed) next(ctx context.Context, limit time.Duration) (string, error) {
	var late <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		late = t.C
	}
	select {
	case l := <-f.lines:
		return l, nil
	case <-f.ended:
		select { // a line sent just before the end comes first
		case l := <-f.lines:
			return l, nil
		default:
			return "", f.err
		}
	case <-ctx.Done():
		return "", ctx.Err()
	case <-late:
		return "", errReplyLate
	}
}

// replyGrace is added to a question's own time before the client stops
// waiting for its reply: the node's clock started first, and a reply it
// takes just in time still counts.
const replyGrace = 2 * time.Second

// errNoReply is a chat cancelled because the model asked a question and
// the input (not a terminal) ended before a reply: none can come, and the
// chat would only wait for the question to time out on the node.
var errNoReply = errors.New("the model asked a question and the input ended before a reply: chat cancelled")

// maxQuestionRunes bounds a line of a question shown: the node bounds a
// question at 4 KiB, so a question is shown whole.
const maxQuestionRunes = 5000

// questionText is a question as the chat shows it: whole, its lines kept
// (each after the first indented under the "? "; blank ones at most one
// in a row, so that none pushes the question off the screen), made safe
// for a terminal. Cut to one line of 240 characters, the question a
// person replied to could end with what the model would take the reply
// for ("... answering yes also lets me erase the history").
func questionText(q string) string {
	var lines []string
	for _, l := range strings.Split(termSafe(q, maxQuestionRunes), "\n") {
		l = strings.TrimRight(l, " ")
		if l == "" && (len(lines) == 0 || lines[len(lines)-1] == "") {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = "  " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// onQuestion shows a question the model asks and posts the person's reply
// line. Ctrl-C or
// Ctrl-D at the reply prompt (or end of input on a terminal) is
// errInterrupted, with the key in ctrl: the person wants the chat
// cancelled. Input that ends (not a terminal) or fails is errNoReply.
func (s *chatSession) onQuestion(ctx context.Context, p actors.Progress) (ctrl string, err error) {
	s.view.ask(s.io.stdout, "? "+questionText(p.Question))
	var reply string
	switch {
	case s.feed != nil:
		var limit time.Duration
		if p.TimeoutMS > 0 {
			limit = time.Duration(p.TimeoutMS)*time.Millisecond + replyGrace
		}
		reply, err = s.feed.next(ctx, limit)
		switch {
		case errors.Is(err, errReplyLate):
			s.view.note(s.io.stderr, "(no reply came before the question expired: the model goes on without one)")
			return "", nil
		case ctx.Err() != nil:
			return "", ctx.Err() // cancelled: the chat says why
		}
	case s.readLine != nil:
		// Keys typed while the chat ran (the next message, say) would
		// otherwise be read as the reply to a question they never saw.
		if s.dropTyped != nil && s.dropTyped() > 0 {
			s.view.note(s.io.stdout, "(what was typed before this question is dropped, not taken as the reply: type the reply now)")
		}
		reply, err = s.readLine("answer> ")
	default:
		return "", errNoReply
	}
	switch {
	case errors.Is(err, liner.ErrPromptAborted):
		return "^C", errInterrupted
	case errors.Is(err, io.EOF) && isTerminal(s.io.stdin):
		return "^D", errInterrupted
	case err != nil:
		if !errors.Is(err, io.EOF) {
			s.view.note(s.io.stderr, "(no answer read: "+termLine(err.Error(), 200)+")")
		}
		return "", errNoReply
	}
	if len(reply) > maxReplyLine {
		reply = reply[:maxReplyLine]
	}
	if err := s.client.getJSON(ctx, "POST", "/v1/chat/questions/"+url.PathEscape(p.QuestionID),
		map[string]string{"answer": strings.TrimSpace(reply)}, nil); err != nil {
		s.view.note(s.io.stderr, fmt.Sprintf("(the answer was not taken: %s)", termLine(err.Error(), 200)))
	}
	return "", nil
}

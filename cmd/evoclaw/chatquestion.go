package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/peterh/liner"

	"github.com/evoclaw/evoclaw/actors"
)

// maxReplyLine bounds a reply typed to a question (the node takes 4 KiB).
const maxReplyLine = 4 << 10

// lineReader reads one line the person types, showing prompt when it can.
type lineReader func(prompt string) (string, error)

// scannerLines reads replies from the lines of sc.
func scannerLines(sc *bufio.Scanner) lineReader {
	return func(string) (string, error) {
		if sc.Scan() {
			return sc.Text(), nil
		}
		if err := sc.Err(); err != nil {
			return "", err
		}
		return "", io.EOF
	}
}

// errNoReply is a chat cancelled because the model asked a question and
// the input (not a terminal) ended before a reply: none can come, and the
// chat would only wait for the question to time out on the node.
var errNoReply = errors.New("the model asked a question and the input ended before a reply: chat cancelled")

// onQuestion shows a question the model asks and posts the person's reply
// line. Ctrl-C or
// Ctrl-D at the reply prompt (or end of input on a terminal) is
// errInterrupted, with the key in ctrl: the person wants the chat
// cancelled. Input that ends (not a terminal) or fails is errNoReply.
func (s *chatSession) onQuestion(ctx context.Context, p actors.Progress) (ctrl string, err error) {
	s.view.note(s.io.stdout, "? "+termLine(p.Question, maxProgressLine))
	if s.readLine == nil {
		return "", errNoReply
	}
	reply, err := s.readLine("answer> ")
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

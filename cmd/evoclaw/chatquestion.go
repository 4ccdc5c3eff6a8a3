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

// onQuestion shows a question the model asks and posts the person's reply
// line; without a reply the question times out on the node. Ctrl-C at the
// reply prompt is errInterrupted: the person wants the chat cancelled.
func (s *chatSession) onQuestion(ctx context.Context, p actors.Progress) error {
	s.view.note(s.io.stdout, "? "+termLine(p.Question, maxProgressLine))
	if s.readLine == nil {
		s.view.note(s.io.stderr, "(no input to answer from: the question will time out)")
		return nil
	}
	reply, err := s.readLine("answer> ")
	if errors.Is(err, liner.ErrPromptAborted) {
		return errInterrupted
	}
	if err != nil {
		s.view.note(s.io.stderr, "(no answer read: "+termLine(err.Error(), 200)+")")
		return nil
	}
	if len(reply) > maxReplyLine {
		reply = reply[:maxReplyLine]
	}
	if err := s.client.getJSON(ctx, "POST", "/v1/chat/questions/"+url.PathEscape(p.QuestionID),
		map[string]string{"answer": strings.TrimSpace(reply)}, nil); err != nil {
		s.view.note(s.io.stderr, fmt.Sprintf("(the answer was not taken: %s)", termLine(err.Error(), 200)))
	}
	return nil
}

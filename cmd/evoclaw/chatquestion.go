package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

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
// line; without a reply the question times out on the node.
func (s *chatSession) onQuestion(ctx context.Context, p actors.Progress) {
	s.view.note(s.io.stdout, "? "+termLine(p.Question, maxProgressLine))
	if s.readLine == nil {
		s.view.note(s.io.stderr, "(no input to answer from: the question will time out)")
		return
	}
	reply, err := s.readLine("answer> ")
	if err != nil {
		s.view.note(s.io.stderr, "(no answer read: "+termLine(err.Error(), 200)+")")
		return
	}
	if len(reply) > maxReplyLine {
		reply = reply[:maxReplyLine]
	}
	if err := s.client.getJSON(ctx, "POST", "/v1/chat/questions/"+url.PathEscape(p.QuestionID),
		map[string]string{"answer": strings.TrimSpace(reply)}, nil); err != nil {
		s.view.note(s.io.stderr, fmt.Sprintf("(the answer was not taken: %s)", termLine(err.Error(), 200)))
	}
}

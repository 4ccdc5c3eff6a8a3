package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// askingProvider asks the person once (question, "which tank?" when
// empty), then answers with the reply. It thinks for delay before it asks.
type askingProvider struct {
	question string
	delay    time.Duration
}

func (askingProvider) Name() string { return "asking" }
func (p askingProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "filling " + last.Content}}, nil
	}
	select {
	case <-time.After(p.delay):
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	q := p.question
	if q == "" {
		q = "which tank?"
	}
	args, err := json.Marshal(map[string]string{"question": q})
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "q", Name: orchestrator.ToolQuestion,
		Arguments: args}}}}, nil
}

// startAskingNode starts a node whose model asks "which tank?" and returns
// its data directory. A question waits questionTimeout at most (the
// node's default when none).
func startAskingNode(t *testing.T, questionTimeout ...time.Duration) string {
	t.Helper()
	return startAskingNodeWith(t, askingProvider{}, questionTimeout...)
}

// startAskingNodeWith is startAskingNode with the model p.
func startAskingNodeWith(t *testing.T, p askingProvider, questionTimeout ...time.Duration) string {
	t.Helper()
	dir := t.TempDir()
	cfg := orchestrator.Config{DataDir: dir, Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"},
		HTTP: orchestrator.HTTPConf{Listen: "127.0.0.1:0"}}
	for _, d := range questionTimeout {
		cfg.Loop.QuestionTimeout.Duration = d
	}
	node, err := orchestrator.Start(context.Background(), cfg, orchestrator.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return dir
}

// TestChatAnswersAQuestion: without a terminal, the line of input after a
// question is its reply, piped or in a one-shot chat; input that ends
// before the reply cancels the chat at once. A one-shot chat once did not
// read its input at all, and both once waited for the question to time out
// on the node (minutes).
func TestChatAnswersAQuestion(t *testing.T) {
	dir := startAskingNode(t)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		noReply     bool
	}{
		{"piped", "fill the tank\nthe blue one\n", nil, false},
		{"one-shot", "the blue one\n", []string{"fill the tank"}, false},
		{"piped, input ends", "fill the tank\n", nil, true},
		{"one-shot, no input", "", []string{"fill the tank"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// a guard against the old wait, not a bound on the time taken
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err, out, errOut := chatIn(ctx, tc.stdin, nil, append([]string{"--data-dir", dir}, tc.args...)...)
			if !strings.Contains(out, "? which tank?\n") {
				t.Fatalf("the question is not shown: stdout %q\nstderr %q", out, errOut)
			}
			if tc.noReply {
				if !errors.Is(err, errNoReply) || strings.Contains(out, "filling") {
					t.Fatalf("err %v, want errNoReply\nstdout %q\nstderr %q", err, out, errOut)
				}
				return
			}
			if err != nil || !strings.Contains(out, "filling the blue one\n") {
				t.Fatalf("err %v\nstdout %q\nstderr %q", err, out, errOut)
			}
		})
	}
}

// TestChatShowsTheWholeQuestion: a question is shown whole, its lines
// kept, and made safe. It was cut to one line of 240 characters: the
// person replied "yes" to the first sentence of a question whose end,
// unseen, said what the model would take that "yes" for.
func TestChatShowsTheWholeQuestion(t *testing.T) {
	long := "Fill the tank? I will " + strings.Repeat("check the level of each of the tanks, ", 8)
	question := long + "\n1. the blue one\n\n\n\n2. the red one\x1b]52;c;cGFzdGU=\x07\nAnswering yes also drains the pond.\n\n"
	dir := startAskingNodeWith(t, askingProvider{question: question})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err, out, errOut := chatIn(ctx, "yes\n", nil, "--data-dir", dir, "fill it")
	want := "? " + strings.TrimSpace(long) + "\n  1. the blue one\n\n  2. the red one\n  Answering yes also drains the pond.\nfilling yes\n"
	if err != nil || out != want {
		t.Fatalf("err %v\nstdout %q\nwant   %q\nstderr %q", err, out, want, errOut)
	}
}

// TestChatInputOpenAndSilentAtAQuestion: input that is not a terminal and
// stays open without a line (a pipe whose writer waits) once held a chat
// at a question for ever: past the question's expiry on the node, past
// the command's context (SIGTERM) and past Ctrl-C. Now the wait ends with
// the question (the model goes on without a reply) or with the chat.
func TestChatInputOpenAndSilentAtAQuestion(t *testing.T) {
	// Questions expire after 300 ms on one node, and not within the test
	// on the other: there the chat can only end with the command.
	expiring, lasting := startAskingNode(t, 300*time.Millisecond), startAskingNode(t)
	for _, tc := range []struct {
		name   string
		args   []string
		cancel time.Duration // the command's context ends after this; 0: not
		ended  bool          // the chat ends with the context, unanswered
	}{
		{"one-shot, the question expires", []string{"fill the tank"}, 0, false},
		{"one-shot, the command is stopped", []string{"fill the tank"}, 500 * time.Millisecond, true},
		{"piped, the command is stopped", nil, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := expiring
			if tc.ended {
				dir = lasting
			}
			stdin, w := io.Pipe()
			defer w.Close()
			if tc.args == nil { // piped: the question comes as a line, then silence
				go func() { _, _ = io.WriteString(w, "fill the tank\n") }()
			}
			// a guard against the old wait, not a bound on the time taken
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			var out, errb testenv.Buffer
			done := make(chan error, 1)
			go func() {
				done <- chatMain(ctx, append([]string{"--data-dir", dir}, tc.args...), chatIO{stdin: stdin, stdout: &out, stderr: &errb})
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(40 * time.Second):
				t.Fatalf("the chat still waits for a reply\nstdout %q\nstderr %q", out.String(), errb.String())
			}
			if !strings.Contains(out.String(), "? which tank?\n") {
				t.Fatalf("the question is not shown: stdout %q\nstderr %q", out.String(), errb.String())
			}
			if tc.ended {
				if !errors.Is(err, context.Canceled) || strings.Contains(out.String(), "filling") {
					t.Fatalf("err %v, want the context's\nstdout %q\nstderr %q", err, out.String(), errb.String())
				}
				return
			}
			// the model got no reply and answered with what it got
			if err != nil || !strings.Contains(out.String(), "filling") || !strings.Contains(errb.String(), "no reply came before the question expired") {
				t.Fatalf("err %v\nstdout %q\nstderr %q", err, out.String(), errb.String())
			}
		})
	}
}

// slowReply is stdin whose second line (the reply) comes after delay, as a
// person who thinks before typing.
type slowReply struct {
	lines []string
	delay time.Duration
}

func (r *slowReply) Read(p []byte) (int, error) {
	if len(r.lines) == 0 {
		return 0, io.EOF
	}
	if len(r.lines) == 1 {
		time.Sleep(r.delay)
	}
	n := copy(p, r.lines[0])
	r.lines[0] = r.lines[0][n:]
	if r.lines[0] == "" {
		r.lines = r.lines[1:]
	}
	return n, nil
}

// TestChatReplyAfterStreamSilence: the time a person takes to reply to a
// question is not the node's silence. The stream's silence bound (here
// 200 ms) once ran on while the reply was typed: a reply slower than it
// closed the chat, and the node then refused the reply.
func TestChatReplyAfterStreamSilence(t *testing.T) {
	old := nodeStreamSilence
	nodeStreamSilence = 200 * time.Millisecond
	t.Cleanup(func() { nodeStreamSilence = old })
	dir := startAskingNode(t)
	// The delay is the condition under test: the reply comes well after
	// the bound would have closed the stream.
	stdin := &slowReply{lines: []string{"fill the tank\n", "the blue one\n"}, delay: 5 * nodeStreamSilence}
	var out, errb strings.Builder
	err := chatMain(context.Background(), []string{"--data-dir", dir}, chatIO{stdin: stdin, stdout: &out, stderr: &errb})
	if err != nil || !strings.Contains(out.String(), "filling the blue one\n") {
		t.Fatalf("err %v\nstdout %q\nstderr %q", err, out.String(), errb.String())
	}
}

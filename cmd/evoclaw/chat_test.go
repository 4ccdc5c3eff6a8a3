package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// chatIn runs chatMain in-process with stdin and an interrupt channel.
func chatIn(ctx context.Context, stdin string, interrupts <-chan os.Signal, args ...string) (err error, stdout, stderr string) {
	var out, errb testenv.Buffer
	err = chatMain(ctx, args, chatIO{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, interrupts: interrupts})
	return err, out.String(), errb.String()
}

func TestChatOneShotExitCodes(t *testing.T) {
	f := newFakeNode(t)
	stale := t.TempDir() // the address of a node that is gone
	writeTestFile(t, filepath.Join(stale, orchestrator.HTTPAddrFile), "http://127.0.0.1:1\n")
	writeTestFile(t, filepath.Join(stale, orchestrator.HTTPTokenFile), fakeToken)
	wrongToken := filepath.Join(t.TempDir(), "token")
	writeTestFile(t, wrongToken, "not-the-token")
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		stdout   string
		stderr   string
		noStdout bool
	}{
		{"answer", []string{"--data-dir", f.dir, "How is pi1 doing?"}, 0, "answer 1: pi1 is fine (How is pi1 doing?)\n", "✓ pi1 sysinfo 12 ms", false},
		{"words joined", []string{"--data-dir", f.dir, "--quiet", "How", "is", "pi1?"}, 0, "pi1 is fine (How is pi1?)", "", false},
		{"not ready", []string{"--data-dir", f.dir, "status 503"}, 1, "", "the node is not ready: the fake says 503", true},
		{"busy", []string{"--data-dir", f.dir, "status 429"}, 1, "", "busy, try again shortly", true},
		// the chat input budget's wait, in hours, is not "shortly"
		{"input budget", []string{"--data-dir", f.dir, "budget 7211"}, 1, "", "busy, try again in 2h (its Retry-After): busy: this chat's input has room in 7211s", true},
		{"budget, a short wait", []string{"--data-dir", f.dir, "budget 3"}, 1, "", "busy, try again shortly", true},
		{"llm failed", []string{"--data-dir", f.dir, "status 502"}, 1, "", "the LLM failed", true},
		{"timeout", []string{"--data-dir", f.dir, "status 504"}, 1, "", "no answer in time", true},
		{"bad request", []string{"--data-dir", f.dir, "status 400"}, 1, "", "the node refused the request", true},
		{"error event", []string{"--data-dir", f.dir, "event-error"}, 1, "", "the LLM failed: model exploded", true},
		{"wrong token", []string{"--data-dir", f.dir, "--token-file", wrongToken, "hi"}, 1, "", "wrong token, from --token-file " + wrongToken, true},
		{"no node here", []string{"--data-dir", t.TempDir(), "hi"}, 1, "", "start `evoclaw serve", true},
		{"node gone", []string{"--data-dir", stale, "hi"}, 1, "", "no evoclaw node answers at http://127.0.0.1:1", true},
		{"--node overrides", []string{"--data-dir", stale, "--node", f.srv.URL, "hi"}, 0, "(hi)", "", false},
		{"bad --node", []string{"--data-dir", f.dir, "--node", "ftp://x", "hi"}, 2, "", "want http://host:port", true},
		{"empty question", []string{"--data-dir", f.dir, " "}, 2, "", "the question is empty", true},
		// the REPL's commands are not sent to the model as a question
		{"/help", []string{"--data-dir", f.dir, "/help"}, 0, "/new    start a new conversation", "", false},
		{"/new", []string{"--data-dir", f.dir, "/new"}, 2, "", "/new is a command of the terminal chat", true},
		// refused before any request, and not offered to continue
		{"bad --conversation", []string{"--data-dir", f.dir, "--conversation", "bad id!", "hi"}, 2, "", `--conversation "bad id!": use letters`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runArgs(append([]string{"chat"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) || tc.noStdout && out != "" {
				t.Fatalf("exit %d (want %d)\nstdout: %q\nstderr: %q", code, tc.code, out, errOut)
			}
			if strings.Contains(out+errOut, "\x1b") {
				t.Fatalf("escape codes in plain output: %q %q", out, errOut)
			}
			if tc.code == 2 && strings.Contains(errOut, "continues this conversation") {
				t.Fatalf("a refused command offers to continue a conversation: %q", errOut)
			}
		})
	}
}

// The environment finds a node too, and --token-file beats the environment.
func TestChatNodeFromEnvironment(t *testing.T) {
	f := newFakeNode(t)
	t.Setenv(envNode, f.srv.URL)
	t.Setenv(envToken, fakeToken)
	if code, out, errOut := runArgs("chat", "--data-dir", t.TempDir(), "hi"); code != 0 || !strings.Contains(out, "(hi)") {
		t.Fatalf("exit %d %q %q", code, out, errOut)
	}
	t.Setenv(envToken, "wrong")
	if code, _, errOut := runArgs("chat", "--data-dir", t.TempDir(), "hi"); code != 1 || !strings.Contains(errOut, "wrong token") {
		t.Fatalf("wrong token from the environment: exit %d %q", code, errOut)
	}
	if code, _, errOut := runArgs("chat", "--token-file", filepath.Join(f.dir, orchestrator.HTTPTokenFile), "hi"); code != 0 {
		t.Fatalf("--token-file: exit %d %q", code, errOut)
	}
}

// Piped input: one chat per non-empty line in one conversation, answers
// alone on stdout, plain progress on stderr.
func TestChatPiped(t *testing.T) {
	f := newFakeNode(t)
	err, out, errOut := chatIn(context.Background(), "How is pi1?\n\n  \nAnd the garage?\n", nil, "--data-dir", f.dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	want := "answer 1: pi1 is fine (How is pi1?)\nanswer 2: pi1 is fine (And the garage?)\n"
	if out != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	if got := f.conversations(); len(got) != 2 || got[0] != "" || got[1] != "conv-1" {
		t.Fatalf("conversations sent %q: the second line must continue the first's", got)
	}
	for _, s := range []string{"→ pi1 sysinfo {\"x\":1}\n", "    reading /proc\n", "✓ pi1 sysinfo 12 ms\n"} {
		if !strings.Contains(errOut, s) {
			t.Fatalf("progress lacks %q:\n%s", s, errOut)
		}
	}
	if strings.ContainsAny(out+errOut, "\x1b\r") || strings.Contains(errOut, "thinking") {
		t.Fatalf("piped output must be plain: %q %q", out, errOut)
	}

	// --conversation continues a conversation; /new starts another; a
	// failing line fails the command but not the lines after it
	f2 := newFakeNode(t)
	err, out, errOut = chatIn(context.Background(), "one\nstatus 503\n/new\ntwo\n", nil, "--data-dir", f2.dir, "--conversation", "mine", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "1 of the chats failed") || !strings.Contains(errOut, "not ready") || errOut == "" {
		t.Fatalf("err %v\n%s", err, errOut)
	}
	if got := f2.conversations(); len(got) != 2 || got[0] != "mine" || got[1] != "" {
		t.Fatalf("conversations sent %q", got)
	}
	if strings.Contains(errOut, "→") || !strings.Contains(out, "(two)") {
		t.Fatalf("--quiet shows progress, or an answer is missing: %q %q", out, errOut)
	}
}

// Nothing a node sends can put an escape sequence or a control character
// on the terminal, and lines are bounded.
func TestChatSanitizesNodeText(t *testing.T) {
	f := newFakeNode(t)
	err, out, errOut := chatIn(context.Background(), "", nil, "--data-dir", f.dir, "evil")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{out, errOut} {
		if strings.ContainsAny(s, "\x1b\x07\r\u009b") || strings.IndexByte(s, 0x9b) >= 0 {
			t.Fatalf("control characters got through: %q", s)
		}
	}
	if !strings.Contains(out, "safe text") || !strings.Contains(out, "…") || len([]rune(out)) > maxAnswerLine+10 {
		t.Fatalf("answer %q", out)
	}
	if !strings.Contains(errOut, "✗ pi1 sysinfo timeout 5003 ms: took too long") || !strings.Contains(errOut, "    line one red") ||
		!strings.Contains(errOut, "    line two\n") {
		t.Fatalf("progress %q", errOut)
	}
}

// Ctrl-C during a one-shot chat closes the request (the node sees it go)
// and ends the command as interrupted.
func TestChatInterruptCancelsTheChat(t *testing.T) {
	f := newFakeNode(t)
	sig := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		err, _, _ := chatIn(context.Background(), "", sig, "--data-dir", f.dir, "slow please")
		done <- err
	}()
	testenv.Eventually(t, 20*time.Second, func() bool { r, _ := f.counts(); return r == 1 }, "the slow chat to start")
	sig <- os.Interrupt
	if err := <-done; !errors.Is(err, errInterrupted) {
		t.Fatalf("err %v, want errInterrupted", err)
	}
	testenv.Eventually(t, 20*time.Second, func() bool { _, c := f.counts(); return c == 1 }, "the node to see the chat cancelled")
}

// The prompt holds only characters the line editor accepts, whatever id
// the node gave the conversation.
func TestChatPrompt(t *testing.T) {
	for conv, want := range map[string]string{
		"":                                 "evoclaw> ",
		"c-1":                              "evoclaw [c-1]> ",
		"a\u200bb\x1b[2Jc\u202e":           "evoclaw [abc]> ",
		strings.Repeat("x", maxPromptID+8): "evoclaw [" + strings.Repeat("x", maxPromptID) + "…]> ",
	} {
		if got := (&chatSession{conv: conv}).prompt(); got != want {
			t.Errorf("prompt for %q: %q, want %q", conv, got, want)
		}
	}
}

// A script learns the conversation's id from stderr, stdout holding the
// answers alone: piped input says it at the end and before /new forgets
// it, a one-shot question at the end, as the terminal chat does.
func TestChatSaysConversationToScripts(t *testing.T) {
	note := func(id string) string {
		return "(evoclaw chat --conversation " + id + " continues this conversation)\n"
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
		stderr      []string // in this order
	}{
		{"piped", "one\ntwo\n", []string{"--quiet"}, []string{note("conv-1")}},
		{"piped, /new", "one\n/new\ntwo\n", []string{"--quiet"}, []string{note("conv-1"), note("conv-2")}},
		{"piped, a chat failed", "one\nstatus 503\n", []string{"--quiet"}, []string{"not ready", note("conv-1")}},
		{"piped, --conversation", "one\n", []string{"--quiet", "--conversation", "mine"}, []string{note("mine")}},
		{"one-shot", "", []string{"--quiet", "hi"}, []string{note("conv-1")}},
		{"with progress", "one\n", nil, []string{"✓ pi1 sysinfo", note("conv-1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeNode(t)
			_, out, errOut := chatIn(context.Background(), tc.stdin, nil, append([]string{"--data-dir", f.dir}, tc.args...)...)
			if strings.Contains(out, "--conversation") {
				t.Fatalf("the id went to stdout, among the answers: %q", out)
			}
			rest := errOut
			for _, s := range tc.stderr {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("stderr lacks %q (in order):\n%s", s, errOut)
				}
				rest = rest[i+len(s):]
			}
			if strings.Count(errOut, "continues this conversation") != strings.Count(strings.Join(tc.stderr, ""), "continues this conversation") {
				t.Fatalf("the id said a different number of times:\n%s", errOut)
			}
		})
	}
}

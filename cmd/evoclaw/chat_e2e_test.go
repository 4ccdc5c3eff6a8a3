package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// e2eChatTranscript: the first question of a conversation asks pi1 for
// sysinfo and quotes it, the second is answered from the conversation.
const e2eChatTranscript = `{"name":"cli","turns":[
  {"content":"","tool_calls":[{"id":"c1","name":"pi1__sysinfo","arguments":{}}],"expect_tools":["pi1__sysinfo"]},
  {"content":"pi1 says: {{result c1}}"},
  {"content":"The garage is quiet ({{user}})"}]}`

// runBinary runs the evoclaw binary with stdin and returns its exit code
// and output.
func runBinary(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(evoclawBinary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// TestChatAndStatusAgainstServe is the acceptance check of `evoclaw chat`
// and `evoclaw status`: a real `evoclaw serve` (scripted LLM) and a real
// `evoclaw edge` pi1 running the shipped demo skill, found from the data
// directory alone.
func TestChatAndStatusAgainstServe(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "node")
	broker := startScriptedServe(t, dir, "e2e", e2eChatTranscript)
	startProc(t, procSpec{}, "edge", "--config", writeDemoAgent(t, dir, broker, "Raspberry Pi 4, kitchen", ""))

	var status string
	testenv.Eventually(t, 20*time.Second, func() bool {
		code, out, _ := runBinary(t, "", "status", "--tools", "--data-dir", data)
		status = out
		return code == 0 && regexp.MustCompile(`pi1 +online`).MatchString(out) && strings.Contains(out, "sysinfo")
	}, "status to show pi1 online with sysinfo")

	if !strings.Contains(status, "Raspberry Pi 4, kitchen") || !strings.Contains(status, "node    e2e") {
		t.Fatalf("status:\n%s", status)
	}

	code, out, oneShotErr := runBinary(t, "", "chat", "--data-dir", data, "How is pi1 doing?")
	if code != 0 || !strings.HasPrefix(out, "pi1 says: hostname: ") || !strings.Contains(out, "load: ") {
		t.Fatalf("one-shot: exit %d\nstdout: %s\nstderr: %s", code, out, oneShotErr)
	}
	code, out, errOut := runBinary(t, "How is pi1?\nAnd the garage?\n", "chat", "--data-dir", data)
	if code != 0 || !strings.HasPrefix(out, "pi1 says: hostname: ") || !strings.HasSuffix(out, "The garage is quiet (And the garage?)\n") ||
		strings.Contains(out+errOut, "\x1b") {
		t.Fatalf("piped: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, _ = runBinary(t, "", "status", "--tools", "--data-dir", data)
	if code != 0 || !regexp.MustCompile(`pi1 +sysinfo +2 +0 +0 `).MatchString(out) {
		t.Fatalf("status after two calls: exit %d\n%s", code, out)
	}

	for _, want := range []string{"→ pi1 sysinfo\n", "✓ pi1 sysinfo "} {
		if !strings.Contains(oneShotErr, want) {
			t.Fatalf("one-shot progress lacks %q:\n%s", want, oneShotErr)
		}
	}
}

// TestChatNoModel: against a real node with no [llm], `evoclaw chat "hi"`
// prints on stderr that no language model is configured and how to
// configure one, nothing on stdout, and exits 1; piped lines stop at the
// first refusal, since every next one would meet the same; status says it
// plainly. The chat printed a fixed reply on stdout and exited 0.
func TestChatNoModel(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "node")
	conf := filepath.Join(dir, "evoclaw.toml")
	writeTestFile(t, conf, "[broker]\nlisten = \"127.0.0.1:0\"\n[http]\nlisten = \"127.0.0.1:0\"\n")
	// The node says so under its ready line, where its operator looks.
	startProc(t, procSpec{Ready: regexp.MustCompile(`^evoclaw orchestrator: no language model is configured: every chat is refused`)}, "serve", "--config", conf, "--data-dir", data)
	const said = "no language model is configured on this node"
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"one question", "", []string{"hi"}},
		{"piped lines", "one\ntwo\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runBinary(t, tc.stdin, append([]string{"chat", "--data-dir", data}, tc.args...)...)
			if code != 1 || out != "" || strings.Count(errOut, said) != 1 || !strings.Contains(errOut, "[llm] in evoclaw.toml") ||
				!strings.Contains(errOut, "docs/LLM.md") {
				t.Fatalf("exit %d (want 1), stdout %q (want none), stderr %q (want %q once, and how to configure a model)", code, out, errOut, said)
			}
		})
	}
	code, out, _ := runBinary(t, "", "status", "--data-dir", data)
	if code != 0 || !strings.Contains(out, "NOT READY: llm: no language model is configured") || !strings.Contains(out, "llm: none (no language model configured") {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
}

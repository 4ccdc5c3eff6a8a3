package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCurlExample runs README.md's curl command as written against
// a real `evoclaw serve`, with the node's address and data directory put
// in place of the defaults: the answer is the model's, and it names the
// conversation that, sent back, continues it. Before, the README had no
// example a new user could paste into a shell.
func TestReadmeCurlExample(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("SKIPPED LOUDLY: curl is not installed; README.md's curl example is not checked")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmd string
	for _, m := range regexp.MustCompile("(?ms)^```sh\n(.*?)^```").FindAllStringSubmatch(string(readme), -1) {
		if strings.HasPrefix(m[1], "curl ") {
			cmd = strings.ReplaceAll(m[1], "\\\n", "")
		}
	}
	if cmd == "" || !strings.Contains(cmd, "http://127.0.0.1:8787") || !strings.Contains(cmd, "evoclaw-data/http-token") {
		t.Fatalf("README.md has no curl example for the node at 127.0.0.1:8787 with evoclaw-data/http-token:\n%s", cmd)
	}
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "transcript.json"), `{"name":"readme","turns":[{"content":"pi-kitchen is fine"}]}`)
	writeTestFile(t, filepath.Join(dir, "evoclaw.toml"), scriptedServeTOML("", filepath.Join(dir, "transcript.json"), ""))
	_, m := startProc(t, procSpec{Ready: serveReady}, "serve", "--config", filepath.Join(dir, "evoclaw.toml"), "--data-dir", filepath.Join(dir, "node"))
	api := m[2]
	cmd = strings.ReplaceAll(cmd, "http://127.0.0.1:8787", api)
	cmd = strings.ReplaceAll(cmd, "evoclaw-data/http-token", filepath.Join(dir, "node", "http-token"))
	c := exec.Command("sh", "-c", strings.Replace(cmd, "curl ", curl+" -sS --max-time 30 ", 1))
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	var answer struct {
		Choices []struct {
			Message struct{ Content string }
		}
		ConversationID string `json:"conversation_id"`
	}
	if err := json.Unmarshal(out, &answer); err != nil || len(answer.Choices) != 1 {
		t.Fatalf("the example's answer is not a chat completion (%v):\n%s", err, out)
	}
	if answer.Choices[0].Message.Content != "pi-kitchen is fine" || answer.ConversationID == "" {
		t.Errorf("answer %q in conversation %q, want the model's answer and a conversation id:\n%s", answer.Choices[0].Message.Content, answer.ConversationID, out)
	}
}

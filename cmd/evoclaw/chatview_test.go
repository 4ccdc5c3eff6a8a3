package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/actors"
)

// TestChatViewProgress: each kind of step the chat shows, as one line or
// two of safe text. A call waiting for approval says so, with the id and
// the commands that decide it; before, the chat only showed the call's
// start and then nothing until the approval timed out.
func TestChatViewProgress(t *testing.T) {
	tests := []struct {
		name string
		p    actors.Progress
		want []string
	}{
		{"tool start", actors.Progress{Kind: actors.ProgressToolStart, Agent: "pi1", Tool: "disk_usage", Args: `{"path":"/"}`},
			[]string{`→ pi1 disk_usage {"path":"/"}`}},
		{"tool end", actors.Progress{Kind: actors.ProgressToolEnd, Agent: "pi1", Tool: "disk_usage", Status: "success", ElapsedMS: 12},
			[]string{"✓ pi1 disk_usage 12 ms"}},
		{"tool error", actors.Progress{Kind: actors.ProgressToolEnd, Agent: "pi1", Tool: "disk_usage", Status: "error", ErrorType: "timeout", ElapsedMS: 30000, Error: "cut"},
			[]string{"✗ pi1 disk_usage timeout 30000 ms: cut"}},
		{"approval wait", actors.Progress{Kind: actors.ProgressApprovalWait, Agent: "pi1", Tool: "reboot", ApprovalID: "apr-7", Error: "rule: reboots need a person"},
			[]string{"⏸ pi1 reboot waits for approval apr-7 (rule: reboots need a person)",
				"decide: evoclaw approvals approve apr-7, or evoclaw approvals deny apr-7"}},
		{"what the model said beside its calls", actors.Progress{Kind: actors.ProgressLLMEnd, Status: "success", Text: "Checking the\nkitchen Pi.\x1b]0;pwned\x07"},
			[]string{"Checking the kitchen Pi."}},
		{"approval wait, hostile id", actors.Progress{Kind: actors.ProgressApprovalWait, Tool: "reboot", ApprovalID: "a\x1b[2Jb"},
			[]string{"⏸ reboot waits for approval ab", "approve ab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			v := &chatView{out: &out, progress: &out}
			v.onProgress(tt.p)
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("shown:\n%s\nwant %q", out.String(), w)
				}
			}
			if strings.ContainsRune(out.String(), 0x1b) {
				t.Errorf("an escape sequence reached the terminal: %q", out.String())
			}
		})
	}
	var quiet bytes.Buffer
	(&chatView{out: &quiet}).onProgress(actors.Progress{Kind: actors.ProgressApprovalWait, Tool: "reboot", ApprovalID: "x"})
	if quiet.Len() != 0 {
		t.Errorf("--quiet showed progress: %q", quiet.String())
	}
}

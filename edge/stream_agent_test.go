//go:build linux

package edge

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqtttest"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

// awaitResult waits for the result (or error) report of id and returns it
// with the progress reports that came before it, checking they came in
// order and within the bounds.
func awaitResult(t *testing.T, p *mqtttest.Commander, id string) (wire.ToolResult, []wire.Progress) {
	t.Helper()
	var res wire.ToolResult
	var progress []wire.Progress
	testenv.Eventually(t, 20*time.Second, func() bool {
		progress = progress[:0]
		for _, r := range p.Reports(id) {
			if r.ReportType == wire.ReportProgress {
				pr, err := wire.DecodeProgress(r)
				if err != nil {
					t.Errorf("progress report: %v", err)
					continue
				}
				progress = append(progress, pr)
				continue
			}
			var err error
			if res, err = wire.DecodeToolResult(r); err != nil {
				t.Fatalf("result: %v", err)
			}
			return true
		}
		return false
	}, "result of "+id)
	for i, pr := range progress {
		if i > 0 && pr.Seq <= progress[i-1].Seq {
			t.Fatalf("progress out of order: seq %d after %d", pr.Seq, progress[i-1].Seq)
		}
	}
	return res, progress
}

func withBash(t *testing.T) func(*Config) {
	ws := t.TempDir()
	return func(c *Config) {
		c.Builtin = toolbox.Builtin{Groups: []string{"coding"}, Workspace: ws}
		c.Skills.Permissions = []string{"shell"}
	}
}

func toolCommand(id, command string, stream bool) string {
	return fmt.Sprintf(`{"command":"tool","request_id":%q,"payload":{"tool":"bash","parameters":{"command":%q,"timeout_ms":20000},"stream_output":%v}}`,
		id, command, stream)
}

// TestAgentStreamsWhenAsked runs a slow bash command with and without
// stream_output: progress only when asked, in order, before a result that
// is the same either way.
func TestAgentStreamsWhenAsked(t *testing.T) {
	p := startAgent(t, withBash(t))
	const slow = `for i in 1 2 3 4 5 6 7 8 9 10; do echo "line $i"; sleep 0.2; done; echo oops >&2`
	p.Send(toolCommand("s-1", slow, true))
	streamed, progress := awaitResult(t, p, "s-1")
	p.Send(toolCommand("s-2", slow, false))
	plain, none := awaitResult(t, p, "s-2")

	if len(none) != 0 {
		t.Fatalf("%d progress reports without stream_output", len(none))
	}
	if len(progress) < 3 {
		t.Fatalf("only %d progress reports over 2 s", len(progress))
	}
	const want = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\noops\n"
	var text strings.Builder
	for _, pr := range progress {
		text.WriteString(pr.Output)
		if len(pr.Output) > wire.MaxProgressOutput || pr.RequestID != "s-1" {
			t.Fatalf("progress %+v", pr)
		}
	}
	// The result never waits for the last chunk, which may arrive after
	// it; what came before it is the start of the output, and once the
	// rest has arrived the chunks are the whole output.
	if !strings.HasPrefix(want, text.String()) {
		t.Fatalf("streamed before the result %q, want a prefix of %q", text.String(), want)
	}
	testenv.Eventually(t, 5*time.Second, func() bool {
		var all strings.Builder
		for _, r := range p.Reports("s-1") {
			if pr, err := wire.DecodeProgress(r); err == nil {
				all.WriteString(pr.Output)
			}
		}
		return all.String() == want
	}, "the whole output streamed")
	streamed.ElapsedMS, plain.ElapsedMS, streamed.RequestID, plain.RequestID = 0, 0, "", ""
	if streamed.ExitCode == nil || plain.ExitCode == nil || *streamed.ExitCode != *plain.ExitCode {
		t.Fatalf("exit codes %v %v", streamed.ExitCode, plain.ExitCode)
	}
	streamed.ExitCode, plain.ExitCode = nil, nil
	if !reflect.DeepEqual(streamed, plain) || streamed.Status != wire.StatusSuccess {
		t.Fatalf("result with streaming %+v\nwithout %+v", streamed, plain)
	}
}

// TestAgentStreamsSkillBinaries streams a skill tool's binary, and
// DisableStreaming turns streaming off whatever the command asks.
func TestAgentStreamsSkillBinaries(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ticker", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nfor i in 1 2 3 4; do echo tick $i; sleep 0.2; done\n"
	if err := os.WriteFile(filepath.Join(dir, "ticker", "bin", "tick"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := "[skill]\nname = \"ticker\"\n[[tools]]\nname = \"tick\"\nbinary = \"bin/tick\"\ndescription = \"ticks\"\ntimeout_ms = 10000\n"
	if err := os.WriteFile(filepath.Join(dir, "ticker", "skill.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("disabled=%v", disabled), func(t *testing.T) {
			p := startAgent(t, func(c *Config) {
				c.Skills.Dirs = []string{dir}
				c.Tools.DisableStreaming = disabled
			})
			p.Send(`{"command":"tool","request_id":"t-1","payload":{"tool":"tick","stream_output":true}}`)
			res, progress := awaitResult(t, p, "t-1")
			if res.Status != wire.StatusSuccess || res.Result != "tick 1\ntick 2\ntick 3\ntick 4\n" {
				t.Fatalf("result %+v", res)
			}
			if disabled != (len(progress) == 0) {
				t.Fatalf("disabled %v: %d progress reports", disabled, len(progress))
			}
		})
	}
}

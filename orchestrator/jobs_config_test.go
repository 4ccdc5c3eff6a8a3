package orchestrator

import (
	"strings"
	"testing"
)

// [[jobs]], [scheduler] and [approvals] decode from evoclaw.toml, and
// mistakes are named.
func TestJobsAndApprovalsConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string { return writeConfig(t, dir, body) }
	cfg, err := LoadConfig(write(`
[scheduler]
model_tool = true
agent_wait = "10s"
[[jobs]]
id = "morning"
schedule = "0 6 * * *"
prompt = "check"
agents = ["pi-1"]
tools = ["{agent}__pump"]
missed = "skip"
[approvals]
timeout = "2m"
[[approvals.rules]]
tools = ["*__reboot"]
[[approvals.rules]]
tools = ["bash"]
args = { command = "*rm *" }
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Jobs) != 1 || cfg.Jobs[0].Missed != "skip" || !cfg.Scheduler.ModelTool || cfg.Scheduler.AgentWait.Seconds() != 10 ||
		len(cfg.Approvals.Rules) != 2 || cfg.Approvals.Rules[1].Args["command"] != "*rm *" || cfg.Approvals.Timeout.Minutes() != 2 {
		t.Fatalf("decoded %+v %+v %+v", cfg.Jobs, cfg.Scheduler, cfg.Approvals)
	}
	for body, want := range map[string]string{
		"[[jobs]]\nid = \"a\"\nschedule = \"61 * * * *\"\nprompt = \"p\"\n":                                                          "schedule",
		"[[jobs]]\nid = \"a\"\nschedule = \"@daily\"\nprompt = \"p\"\n[[jobs]]\nid = \"a\"\nschedule = \"@daily\"\nprompt = \"p\"\n": "twice",
		"[[approvals.rules]]\n": "sets none",
		"[approvals]\ntimeout = \"20m\"\n[[approvals.rules]]\ntools = [\"x\"]\n": "chat_timeout",
	} {
		if _, err := LoadConfig(write(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error about %s", body, err, want)
		}
	}
}

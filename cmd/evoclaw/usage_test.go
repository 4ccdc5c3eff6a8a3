package main

import (
	"strings"
	"testing"
)

// TestUsageErrorsShowTheirCommand: a usage error prints the error, then
// the usage lines of its command (with their continuation lines) and a
// pointer to the whole text; an unknown command prints the whole text.
// Before, every usage error printed all forty lines after the one that
// said what was wrong.
func TestUsageErrorsShowTheirCommand(t *testing.T) {
	tests := []struct {
		args       []string
		want, none []string
	}{
		{[]string{"chaos"}, []string{"chaos wants one scenario name", "evoclaw chaos  SCENARIO", "(evoclaw help: every command)"}, []string{"evoclaw serve", "evoclaw audit"}},
		{[]string{"audit", "report", "nosuch"}, []string{`no report "nosuch"`, "evoclaw audit report NAME", "evoclaw audit status", "(evoclaw help"}, []string{"evoclaw serve", "evoclaw logs"}},
		{[]string{"chat", "--no-such-flag"}, []string{"evoclaw chat", "Tool progress shows live", "(evoclaw help"}, []string{"evoclaw status"}},
		{[]string{"nosuch"}, []string{`unknown command "nosuch"`, "evoclaw serve", "evoclaw version"}, []string{"(evoclaw help"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runArgs(tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			for _, w := range tt.none {
				if strings.Contains(errOut, w) {
					t.Errorf("stderr holds %q:\n%s", w, errOut)
				}
			}
		})
	}
	for _, cmd := range []string{"demo", "serve", "edge", "chat", "status", "jobs", "approvals", "agents", "audit", "logs", "metrics", "bench", "load", "chaos", "cluster", "skills"} {
		if usageOf(cmd) == "" {
			t.Errorf("the usage text names no line of %s", cmd)
		}
	}
}

// TestGroupHelp: asking a command of subcommands for help prints its
// usage lines on stdout and exits 0. Before, `evoclaw skills --help` (and
// audit, jobs, approvals, cluster) said "unknown skills command" and
// exited 2, while `evoclaw agents --help` and every other command answered.
func TestGroupHelp(t *testing.T) {
	tests := []struct{ group, want string }{
		{"audit", "evoclaw audit verify"},
		{"jobs", "evoclaw jobs list"},
		{"approvals", "evoclaw approvals list"},
		{"skills", "evoclaw skills validate"},
		{"cluster", "evoclaw cluster cert"},
	}
	for _, tt := range tests {
		for _, help := range []string{"--help", "-h", "help"} {
			t.Run(tt.group+" "+help, func(t *testing.T) {
				code, out, errOut := runArgs(tt.group, help)
				if code != 0 || errOut != "" {
					t.Fatalf("exit %d, stderr %q, want 0 and nothing", code, errOut)
				}
				if !strings.Contains(out, tt.want) || strings.Contains(out, "evoclaw serve") {
					t.Errorf("stdout is not %s's usage:\n%s", tt.group, out)
				}
			})
		}
	}
}

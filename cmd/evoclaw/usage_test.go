package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUsageErrorsShowTheirCommand: a usage error prints the error, then
// the usage lines of its command (with their continuation lines) and a
// pointer to the whole text; an unknown command prints the whole text.
// Before, every usage error printed all forty lines after the one that
// said what was wrong, and a report asked without its argument named it
// without saying where one is found.
func TestUsageErrorsShowTheirCommand(t *testing.T) {
	tests := []struct {
		args       []string
		want, none []string
	}{
		{[]string{"chaos"}, []string{"chaos wants one scenario name", "evoclaw chaos  SCENARIO", "(evoclaw help: every command)"}, []string{"evoclaw serve", "evoclaw audit"}},
		{[]string{"audit", "report", "nosuch"}, []string{`no report "nosuch"`, "evoclaw audit report NAME", "evoclaw audit status", "(evoclaw help"}, []string{"evoclaw serve", "evoclaw logs"}},
		// A report without its argument says where to find one.
		{[]string{"audit", "report", "calls"}, []string{"report calls needs its conversation_id", "conv= of `evoclaw logs`", "evoclaw audit report tokens-by-conversation", "evoclaw audit report NAME"}, []string{"evoclaw serve"}},
		{[]string{"audit", "report", "job-runs"}, []string{"report job-runs needs its job", "`evoclaw jobs list`"}, []string{"evoclaw serve"}},
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
// usage lines on stdout, then where its subcommands' flags are, and exits
// 0. Before, `evoclaw skills --help` (and audit, jobs, approvals, cluster)
// said "unknown skills command" and exited 2, while `evoclaw agents
// --help` and every other command answered; then it printed the lines
// alone, so `evoclaw jobs --help` showed no flag and said not where they were.
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
				if flags := "(evoclaw " + tt.group + " COMMAND --help lists its flags)\n"; !strings.HasSuffix(out, flags) {
					t.Errorf("stdout does not end with %q:\n%s", flags, out)
				}
			})
		}
	}
	// help itself has no flags: asked for help, it prints every command.
	// Before, `evoclaw help --help` was "unknown command" and exit 2.
	for _, help := range []string{"--help", "-h"} {
		code, out, errOut := runArgs("help", help)
		if code != 0 || errOut != "" || out != usage {
			t.Errorf("help %s: exit %d, stderr %q, want 0 and the usage text on stdout:\n%s", help, code, errOut, out)
		}
	}
}

// TestCommandHelp: COMMAND --help (and -h) prints, on stdout with exit 0,
// the command's usage lines and its flags, as `evoclaw help` and a group's
// --help do. Before, it printed Go's "Usage of evoclaw chat:" and the
// flags alone on stderr, so `evoclaw chat --help | less` showed nothing
// and no command said what arguments it takes.
func TestCommandHelp(t *testing.T) {
	tests := []struct {
		args []string
		line string // the usage line it starts with
		flag string // a flag it lists
	}{
		{[]string{"demo"}, "  evoclaw demo   [--data-dir DIR]", "-data-dir"},
		{[]string{"serve"}, "  evoclaw serve  [--config evoclaw.toml]", "-config"},
		{[]string{"edge"}, "  evoclaw edge   --config agent.toml", "-data-dir"},
		{[]string{"chat"}, "  evoclaw chat   [--data-dir DIR | --node URL]", "-conversation"},
		{[]string{"status"}, "  evoclaw status [--data-dir DIR | --node URL]", "-tools"},
		{[]string{"logs"}, "  evoclaw logs   [--data-dir DIR", "-follow"},
		{[]string{"metrics"}, "  evoclaw metrics --tools", "-csv"},
		{[]string{"bench"}, "  evoclaw bench  [--calls N]", "-floor"},
		{[]string{"load"}, "  evoclaw load   [--agents 200]", "-conversations"},
		{[]string{"chaos"}, "  evoclaw chaos  SCENARIO", "-calls"},
		{[]string{"audit", "sql"}, "  evoclaw audit sql [--data-dir DIR]", "-tier"},
		{[]string{"audit", "verify"}, "  evoclaw audit verify [--data-dir DIR]", "-tier"},
		{[]string{"audit", "status"}, "  evoclaw audit status [--data-dir DIR]", "-cold-url"},
		{[]string{"skills", "list"}, "  evoclaw skills list [--permissions a,b]", "-permissions"},
		{[]string{"cluster", "cert"}, "  evoclaw cluster cert --dir DIR NODE_ID", "-host"},
		{[]string{"agents", "add"}, "  evoclaw agents add NAME", "-rotate"},
		{[]string{"jobs", "add"}, "  evoclaw jobs list | add ID", "-schedule"},
	}
	for _, tt := range tests {
		for _, help := range []string{"--help", "-h"} {
			t.Run(strings.Join(tt.args, " ")+" "+help, func(t *testing.T) {
				code, out, errOut := runArgs(append(tt.args, help)...)
				if code != 0 || errOut != "" {
					t.Fatalf("exit %d, stderr %q, want 0 and nothing", code, errOut)
				}
				if !strings.HasPrefix(out, "usage:\n"+tt.line) || !strings.Contains(out, "\nflags:\n") || !strings.Contains(out, "\n  "+tt.flag) {
					t.Errorf("stdout is not the usage line %q and flag %s:\n%s", tt.line, tt.flag, out)
				}
				if strings.Contains(out, "evoclaw version") {
					t.Errorf("stdout holds every command's usage:\n%s", out)
				}
			})
		}
	}
}

// TestUsageErrors: a usage error (bad flag, bad flag value, an argument
// where a command takes none, `help` of an unknown command) prints its
// message once on stderr, then the command's usage lines, and exits 2;
// `help COMMAND` prints that command's lines on stdout. Before, a bad
// flag printed its message twice with Go's list of every flag between
// them, serve, edge, demo, bench and load ignored arguments (`evoclaw
// serve evoclaw.toml` started a node on the built-in defaults), and logs
// --limit and chaos --calls took a negative number as their default.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"chat", "--no-such-flag"}, []string{"flag provided but not defined: -no-such-flag", "evoclaw chat"}},
		{[]string{"logs", "--limit", "many"}, []string{`invalid value "many" for flag -limit`, "evoclaw logs"}},
		{[]string{"serve", "--config", filepath.Join(dir, "none.toml"), "evoclaw.toml"}, []string{`serve takes no arguments, got ["evoclaw.toml"]`, "--config evoclaw.toml", "evoclaw serve"}},
		{[]string{"edge", "--config", filepath.Join(dir, "none.toml"), "x"}, []string{`edge takes no arguments, got ["x"]`, "evoclaw edge"}},
		{[]string{"demo", "--data-dir", "/dev/null/demo", "now"}, []string{`demo takes no arguments, got ["now"]`, "evoclaw demo"}},
		{[]string{"load", "--agents", "-1", "x"}, []string{`load takes no arguments, got ["x"]`}},
		{[]string{"bench", "--concurrency", "0", "x"}, []string{`bench takes no arguments, got ["x"]`}},
		{[]string{"help", "nosuch"}, []string{`unknown command "nosuch"`}},
		{[]string{"logs", "--data-dir", filepath.Join(dir, "none"), "--limit", "-1"}, []string{"--limit -1 must not be negative", "evoclaw logs"}},
		{[]string{"chaos", "edge-kill", "--calls", "-1", "--data-dir", "/dev/null/chaos"}, []string{"--calls -1 must not be negative", "evoclaw chaos"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runArgs(tt.args...)
			if code != 2 || out != "" {
				t.Fatalf("exit %d, stdout %q, want 2 and nothing\n%s", code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if first, _, _ := strings.Cut(errOut, "\n"); strings.Count(errOut, first[strings.LastIndex(first, ": ")+2:]) != 1 || strings.Contains(errOut, "Usage of") {
				t.Errorf("stderr repeats the error or lists every flag:\n%s", errOut)
			}
		})
	}
	code, out, errOut := runArgs("help", "chat")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage:\n  evoclaw chat ") || strings.Contains(out, "evoclaw serve") {
		t.Errorf("help chat: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(usage, "exit status: 0 done, 1 failed, 2 usage error") {
		t.Error("the usage text does not give the exit statuses")
	}
}

// TestConfigFileErrors: every command that reads evoclaw.toml or
// agent.toml with --config answers a file it cannot load (missing, a
// directory, an unknown key, a wrong type, a value out of range) with
// one line naming the file and what is wrong, and exit 1, as serve did.
// Before, status, chat, logs, metrics and audit exited 2 and printed
// their usage lines after it, as if the command line were wrong, and
// `evoclaw edge` where there is no agent.toml said only "open agent.toml:
// no such file or directory".
func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	files := []struct{ name, body, want string }{
		{"missing.toml", "", "no such file or directory"},
		{"unknown.toml", "htp = 1\n", "htp (did you mean http?)"},
		{"type.toml", "node_id = 5\n", "line 1: node_id: want a string, got an integer"},
		{"range.toml", "[http]\nlisten = \"127.0.0.1:99999\"\n", "http.listen"},
		{"duration.toml", "[audit.retention]\nmax_age = 3600\n", "audit.retention.max_age: a number"},
	}
	for _, f := range files {
		if f.body != "" {
			writeFile(t, filepath.Join(dir, f.name), f.body)
		}
	}
	commands := [][]string{{"serve"}, {"status"}, {"chat", "hello"}, {"logs"}, {"metrics", "--tools"}, {"audit", "status"}, {"audit", "verify"}, {"agents", "list"}}
	for _, cmd := range commands {
		for _, f := range files {
			t.Run(strings.Join(cmd, " ")+" "+f.name, func(t *testing.T) {
				code, out, errOut := runArgs(append(cmd, "--config", filepath.Join(dir, f.name), "--data-dir", filepath.Join(dir, "data"))...)
				if code != 1 || out != "" {
					t.Fatalf("exit %d, stdout %q, want 1 and nothing\n%s", code, out, errOut)
				}
				if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "evoclaw: ") || !strings.Contains(errOut, f.name) || !strings.Contains(errOut, f.want) {
					t.Errorf("stderr is not one line naming %s and %q:\n%s", f.name, f.want, errOut)
				}
			})
		}
	}
	code, _, errOut := runArgs("edge", "--config", filepath.Join(dir, "type.toml"))
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "type.toml") {
		t.Errorf("edge: exit %d\n%s", code, errOut)
	}
	// Without --config, where there is no agent.toml: say how to get one.
	t.Chdir(dir)
	code, _, errOut = runArgs("edge")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "agent.toml") || !strings.Contains(errOut, "--config") || !strings.Contains(errOut, "evoclaw agents add") {
		t.Errorf("edge without agent.toml: exit %d\n%s", code, errOut)
	}
}

// TestSkillsInstallHelp: skills install asked for help prints its usage
// line and writes nothing; an argument that looks like a flag is a usage
// error, not a directory. Before, `evoclaw skills install demo --help`
// wrote the demo skill into a new directory named "--help".
func TestSkillsInstallHelp(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"skills", "install", "demo", "--help"}, 0, "usage:\n  evoclaw skills install NAME DIR"},
		{[]string{"skills", "install", "-h"}, 0, "usage:\n  evoclaw skills install NAME DIR"},
		{[]string{"skills", "install", "demo", "--dir=x"}, 2, `takes no flags, got "--dir=x"`},
	}
	for _, tt := range tests {
		code, out, errOut := runArgs(tt.args...)
		if code != tt.code || !strings.Contains(out+errOut, tt.want) {
			t.Errorf("%q: exit %d, want %d and %q\nstdout: %s\nstderr: %s", tt.args, code, tt.code, tt.want, out, errOut)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("the working directory holds %v (%v), want nothing written", entries, err)
	}
}

// TestDocumentedFlagsExist: every --flag that README.md, docs/ or the
// usage text shows in an `evoclaw COMMAND ...` line is a flag of that
// command (as its --help lists them), so that no example sends a reader
// to a flag that was renamed or never was.
func TestDocumentedFlagsExist(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	var lines []string
	for _, f := range append(files, filepath.Join("..", "..", "README.md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile("`(evoclaw [^`]+)`").FindAllStringSubmatch(strings.ReplaceAll(string(b), `\|`, "|"), -1) {
			lines = append(lines, m[1])
		}
	}
	for line := range strings.Lines(usage) {
		if rest, ok := strings.CutPrefix(line, "  evoclaw "); ok {
			lines = append(lines, "evoclaw "+rest)
		}
	}
	helps := map[string]string{}
	checked := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 || commands[f[1]] == nil {
			continue
		}
		cmd := f[1]
		if groups[f[1]] || f[1] == "agents" {
			if len(f) < 3 {
				continue
			}
			cmd += " " + strings.Split(f[2], "|")[0]
		}
		if _, ok := helps[cmd]; !ok {
			_, out, _ := runArgs(append(strings.Fields(cmd), "--help")...)
			helps[cmd] = out
		}
		for _, m := range regexp.MustCompile(`--([a-z][a-z-]*)`).FindAllStringSubmatch(l, -1) {
			checked++
			if m[1] != "help" && !regexp.MustCompile(`\n  -`+m[1]+`[ \n]`).MatchString(helps[cmd]) {
				t.Errorf("%q shows --%s, which evoclaw %s --help does not list:\n%s", l, m[1], cmd, helps[cmd])
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d flags: the patterns no longer find them", checked)
	}
}

// TestNoAuditDatabaseSaysWhere: audit, logs and metrics run where there is
// no audit database (the demo's trail is in evoclaw-demo, not the default
// evoclaw-data) exit 1 with a line saying which flag names the data
// directory and where the demo's is. Before, they said only "no database
// file at evoclaw-data/audit.db: stat ...: no such file or directory".
func TestNoAuditDatabaseSaysWhere(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for _, args := range [][]string{
		{"audit", "verify"},
		{"audit", "sql", "SELECT 1"},
		{"audit", "status"},
		{"audit", "report", "tools"},
		{"logs"},
		{"metrics", "--tools"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, errOut := runArgs(append(args, "--data-dir", none)...)
			if code != 1 || !strings.Contains(errOut, "no database file at "+filepath.Join(none, "audit.db")) {
				t.Fatalf("exit %d, want 1 and the missing file named:\n%s", code, errOut)
			}
			for _, w := range []string{"--data-dir DIR", "evoclaw-demo for the demo's", "--config evoclaw.toml"} {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// TestJobsAddNeedsScheduleAndPrompt: `jobs add` without --schedule or
// --prompt is a usage error (exit 2) naming both flags, sent to no node.
// Before, the node refused it with "schedule: required" and exit 1.
func TestJobsAddNeedsScheduleAndPrompt(t *testing.T) {
	f := newFakeNode(t)
	for _, args := range [][]string{
		{"jobs", "add", "morning", "--prompt", "How is the pump?"},
		{"jobs", "add", "morning", "--schedule", "0 6 * * *"},
	} {
		code, _, errOut := runArgs(append(args, "--data-dir", f.dir)...)
		if code != 2 || !strings.Contains(errOut, "jobs add needs --schedule") || !strings.Contains(errOut, "--prompt TEXT") {
			t.Errorf("%q: exit %d, want 2 and both flags named:\n%s", args, code, errOut)
		}
	}
}

// TestServeWithoutItsConfigSaysWhat: `serve --config FILE` naming no file
// exits 1 with one line: the error, then to write the file (and where its
// keys are) or to leave --config out. Before, the error alone.
func TestServeWithoutItsConfigSaysWhat(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "evoclaw.toml")
	code, _, errOut := runArgs("serve", "--config", conf)
	if code != 1 || !strings.Contains(errOut, "no such file") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, want 1 and one line naming the missing file:\n%s", code, errOut)
	}
	for _, w := range []string{"write that file first", "docs/CONFIG.md", "leave out --config"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSkillsValidate(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "skills")
	var out, errOut bytes.Buffer
	if code := run([]string{"skills", "validate", root}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1 for broken fixtures; stdout:\n%s", code, out.String())
	}
	for _, want := range []string{
		"ok      listing 0.1.0 (2 tools)",
		filepath.Join(root, "broken-wrong-type", "skill.toml") + ":8: tools[0].timeout_ms: must be an integer, got string",
		filepath.Join(root, "broken-missing-header", "skill.toml") + ": skill: required table [skill] is missing",
		filepath.Join(root, "broken-unknown-key", "skill.toml") + `:11: tools[1].timeout: unknown key "timeout"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("validate output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"skills", "validate", filepath.Join(root, "listing")}, &out, &errOut); code != 0 {
		t.Fatalf("valid skill: exit %d\n%s", code, out.String())
	}
}

func TestSkillsList(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "skills", "listing")
	var out, errOut bytes.Buffer
	if code := run([]string{"skills", "list", "--permissions", "network", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(out.String(), "\n")
	var probe string
	for _, l := range lines {
		if strings.HasPrefix(l, "net_probe") {
			probe = l
		}
	}
	if !strings.Contains(probe, "no") || !strings.Contains(probe, "missing permissions: shell") {
		t.Fatalf("net_probe line = %q\n%s", probe, out.String())
	}
	out.Reset()
	run([]string{"skills", "list", "--permissions", "network,shell", dir}, &out, &errOut)
	if !strings.Contains(out.String(), "2 tools offered with permissions [network,shell]") {
		t.Fatalf("with both permissions:\n%s", out.String())
	}
}

func TestSkillsListConfig(t *testing.T) {
	dir := t.TempDir()
	skillsDir, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "skills", "listing"))
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "agent.toml")
	body := "agent_id = \"pi-1\"\n[skills]\ndirs = [\"" + filepath.Dir(skillsDir) + "\"]\npermissions = [\"network\", \"shell\"]\n" +
		"[builtin]\ngroups = [\"read-only\"]\nworkspace = \"ws\"\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"skills", "list", "--config", conf}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"read ", "builtin", "net_probe", "listing"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list --config lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "missing permissions: shell") {
		t.Errorf("granted permissions from agent.toml were ignored:\n%s", out.String())
	}
	// Built-ins are gated like skills: read needs file_read, not granted.
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "read ") && (!strings.Contains(line, " no ") || !strings.Contains(line, "missing permissions: file_read")) {
			t.Errorf("read line %q, want not offered for lack of file_read", line)
		}
	}
}

// TestSkillsInstallKeepsEdits: installing a shipped skill where it already
// is writes nothing and says how to install it again. Before, it replaced
// every file without a word, and an edited skill.toml or tool script
// (a threshold, a path, a sandbox setting) was gone.
func TestSkillsInstallKeepsEdits(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := runArgs("skills", "install", "demo", dir); code != 0 || !strings.Contains(out, "installed skill demo") {
		t.Fatalf("first install: exit %d\n%s%s", code, out, errOut)
	}
	conf := filepath.Join(dir, "demo", "skill.toml")
	edited, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	edited = append(edited, "# a person's edit\n"...)
	if err := os.WriteFile(conf, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runArgs("skills", "install", "demo", dir)
	if code != 1 || out != "" || !strings.Contains(errOut, "already in") || !strings.Contains(errOut, "remove the directory first") {
		t.Fatalf("second install: exit %d, stdout %q, stderr %q; want 1 and an error saying what to do", code, out, errOut)
	}
	if got, err := os.ReadFile(conf); err != nil || !bytes.Equal(got, edited) {
		t.Fatalf("the edited skill.toml changed: %v\n%s", err, got)
	}
	if code, _, errOut := runArgs("skills", "install", "system", dir); code != 0 {
		t.Fatalf("another skill beside it: exit %d\n%s", code, errOut)
	}
}

// TestSkillsValidateShowsHostileTextSafely: `skills validate` reviews
// skills that may be anyone's; their version and the name of a directory
// in the tree were printed raw, so an OSC in either could write the
// clipboard or set the title of the terminal of whoever reviewed them.
func TestSkillsValidateShowsHostileTextSafely(t *testing.T) {
	root := t.TempDir()
	// version is TOML: its \u escapes are the skill's characters.
	skill := func(dir, version string) {
		if err := os.MkdirAll(filepath.Join(root, dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(root, dir, "bin", "t"), "#!/bin/sh\necho hi\n")
		writeTestFile(t, filepath.Join(root, dir, "skill.toml"), "[skill]\nname = \"probe\"\nversion = \""+version+
			"\"\n[[tools]]\nname = \"t\"\nbinary = \"bin/t\"\ndescription = \"d\"\n")
	}
	skill("a", `1.0.0\u001b]52;c;cGFzdGU=\u0007\u009d0;title\u009c`)
	skill("b\x1b]0;title\x07", "1.0.0") // a second "probe": broken, its path quoted
	var out, errOut bytes.Buffer
	if code := run([]string{"skills", "validate", root}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1 (one broken)\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "ok      probe 1.0.0 (1 tools) in ") || !strings.Contains(out.String(), "broken  "+filepath.Join(root, "b")+"/skill.toml") {
		t.Fatalf("validate output:\n%q", out.String())
	}
	if strings.ContainsAny(out.String()+errOut.String(), "\x1b\x07\u009d\u009c") {
		t.Fatalf("a skill's text reached the terminal raw: %q", out.String())
	}
}

// TestSkillsListNodeConfig: `skills list --config` given a node's
// evoclaw.toml is a usage error that prints the command listing the
// node's own skill tools (its [skills] dirs, shell-quoted, and
// permissions), which then runs; an agent.toml that is merely incomplete
// keeps its own error. Before, a node's file was refused with "unknown
// keys: broker (known here: agent_id, ...)".
func TestSkillsListNodeConfig(t *testing.T) {
	dir := t.TempDir()
	skillDir := filepath.Join(dir, "node skills")
	runCLI(t, 0, "skills", "install", "system", skillDir)
	node := filepath.Join(dir, "evoclaw.toml")
	writeTestFile(t, node, "[broker]\nlisten = \"127.0.0.1:42883\"\n[skills]\ndirs = [\"node skills\"]\npermissions = [\"hw_read\"]\n")
	_, errOut := runCLI(t, 2, "skills", "list", "--config", node)
	want := "the node's own skill tools: evoclaw skills list --permissions hw_read '" + skillDir + "'\n"
	if !strings.Contains(errOut, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, errOut)
	}
	out, _ := runCLI(t, 0, "skills", "list", "--permissions", "hw_read", skillDir)
	if !regexp.MustCompile(`(?m)^gpio_read\s+system\s+yes`).MatchString(out) {
		t.Errorf("the printed command does not list the node's tools:\n%s", out)
	}
	writeTestFile(t, node, "[http]\nlisten = \"off\"\n")
	if _, errOut := runCLI(t, 2, "skills", "list", "--config", node); !strings.Contains(errOut, "this node has no [skills] dirs") {
		t.Errorf("a node without [skills]:\n%s", errOut)
	}
	agent := filepath.Join(dir, "agent.toml")
	writeTestFile(t, agent, "[skills]\ndirs = [\"node skills\"]\n")
	if _, errOut := runCLI(t, 1, "skills", "list", "--config", agent); !strings.Contains(errOut, "agent_id") || strings.Contains(errOut, "node's evoclaw.toml") {
		t.Errorf("an agent.toml without agent_id:\n%s", errOut)
	}
}

package skills

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeSkill writes a skill.toml with body into a fresh directory and
// returns its path.
func writeSkill(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad(t *testing.T) {
	path := writeSkill(t, `
[skill]
name = "system"
version = "1.0.0"
description = "Linux / Raspberry Pi health"

[[tools]]
name = "cpu_temp"
binary = "bin/cpu_temp"
description = "CPU temperature in °C"
timeout_ms = 5000
permissions = ["hw_read"]
sandboxing = "bubblewrap"
[tools.parameters]
required = ["zone"]
[tools.parameters.properties.zone]
type = "integer"
description = "thermal zone index"
default = 0
[tools.parameters.properties.verbose]
type = "boolean"
[tools.metadata]
category = "hardware"

[[tools]]
name = "uptime"
binary = "./bin/uptime"
`)
	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir := filepath.Dir(path)
	want := Skill{
		Name: "system", Version: "1.0.0", Description: "Linux / Raspberry Pi health", Dir: dir,
		Tools: []Tool{{
			Name: "cpu_temp", Binary: "bin/cpu_temp", Description: "CPU temperature in °C",
			Sandboxing: SandboxBubblewrap, Output: OutputText, TimeoutMS: 5000, Permissions: []string{"hw_read"},
			Parameters: Parameters{
				Properties: map[string]Param{
					"zone":    {Type: TypeInteger, Description: "thermal zone index", Default: int64(0)},
					"verbose": {Type: TypeBoolean},
				},
				Required: []string{"zone"},
			},
			Metadata: map[string]string{"category": "hardware"},
			Skill:    "system", Dir: dir,
		}, {
			Name: "uptime", Binary: "./bin/uptime", Sandboxing: SandboxNone, Output: OutputText,
			Parameters: Parameters{Properties: map[string]Param{}},
			Skill:      "system", Dir: dir,
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load =\n%#v\nwant\n%#v", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	const head = "[skill]\nname = \"demo\"\n\n" // lines 1-3
	tests := []struct {
		name  string
		body  string
		line  int
		field string
		msg   string // substring of Msg
	}{
		{name: "syntax", body: "[skill]\nname = \"demo\ndescription = \"x\"\n", line: 2, msg: "newlines"},
		{name: "duplicate key", body: head + "name = \"again\"\n", line: 4, msg: "already been defined"},
		{name: "no skill table", body: "[[tools]]\nname = \"a\"\nbinary = \"a\"\n", field: "skill", msg: "[skill] is missing"},
		{name: "no skill name", body: "[skill]\nversion = \"1\"\n", line: 1, field: "skill.name", msg: "required key is missing"},
		{name: "bad skill name", body: "[skill]\nname = \"my skill\"\n", line: 2, field: "skill.name", msg: "must be 1 to 64 characters"},
		{name: "unknown top-level table", body: head + "[skil]\nname = \"x\"\n", line: 4, field: "skil", msg: `unknown key "skil"`},
		{name: "unknown key in second tool", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\ntimeout = 5\n\n[[tools]]\nname = \"b\"\nbinary = \"b\"\ntimeout = 5\n",
			line: 7, field: "tools[0].timeout", msg: `unknown key "timeout"`},
		{name: "miscased key", body: head + "[[tools]]\nname = \"a\"\nBinary = \"a\"\n", line: 6, field: "tools[0].Binary", msg: `unknown key "Binary"`},
		{name: "absolute binary", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[[tools]]\nname = \"b\"\nbinary = \"/usr/bin/b\"\n",
			line: 9, field: "tools[1].binary", msg: "must be relative to the skill directory"},
		{name: "escaping binary", body: head + "[[tools]]\nname = \"a\"\nbinary = \"../x\"\n", line: 6, field: "tools[0].binary", msg: "must stay inside the skill directory"},
		{name: "sneaky escaping binary", body: head + "[[tools]]\nname = \"a\"\nbinary = \"bin/../../x\"\n", line: 6, field: "tools[0].binary", msg: "must stay inside"},
		{name: "binary is the directory", body: head + "[[tools]]\nname = \"a\"\nbinary = \"bin/..\"\n", line: 6, field: "tools[0].binary", msg: "must name a file"},
		{name: "missing binary points at the tool", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n\n[[tools]]\nname = \"b\"\n",
			line: 8, field: "tools[1].binary", msg: "required key is missing"},
		{name: "bad tool name", body: head + "[[tools]]\nname = \"cpu temp\"\nbinary = \"a\"\n", line: 5, field: "tools[0].name", msg: "must be 1 to 64 characters"},
		{name: "long tool name", body: head + "[[tools]]\nname = \"" + strings.Repeat("a", 65) + "\"\nbinary = \"a\"\n", line: 5, field: "tools[0].name"},
		{name: "duplicate tool", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[[tools]]\nname = \"a\"\nbinary = \"b\"\n",
			line: 8, field: "tools[1].name", msg: `duplicate tool name "a" (also tools[0])`},
		{name: "negative timeout", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\ntimeout_ms = -1\n", line: 7, field: "tools[0].timeout_ms", msg: "must be >= 0"},
		{name: "timeout as string", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\ntimeout_ms = \"5s\"\n", line: 7, field: "tools[0].timeout_ms", msg: "must be an integer, got string"},
		{name: "permissions not an array", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\npermissions = \"shell\"\n", line: 7, field: "tools[0].permissions", msg: "must be an array of strings"},
		{name: "empty permission", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\npermissions = [\"shell\", \"\"]\n", line: 7, field: "tools[0].permissions", msg: "element 1"},
		{name: "unknown sandboxing", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\nsandboxing = \"docker\"\n", line: 7, field: "tools[0].sandboxing", msg: `unknown value "docker"`},
		{name: "tools is a table", body: head + "[tools]\nname = \"a\"\n", line: 4, field: "tools", msg: "must be an array of tables"},
		{name: "unknown param type", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters.properties.zone]\ntype = \"float\"\n",
			line: 8, field: "tools[0].parameters.properties.zone.type", msg: `unknown type "float"`},
		{name: "param without type", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters.properties.zone]\ndescription = \"z\"\n",
			line: 7, field: "tools[0].parameters.properties.zone.type", msg: "required key is missing"},
		{name: "bad param name", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters.properties.\"my zone\"]\ntype = \"string\"\n",
			line: 7, field: `tools[0].parameters.properties."my zone"`, msg: "parameter"},
		{name: "required not defined", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters]\nrequired = [\"zone\"]\n",
			line: 8, field: "tools[0].parameters.required", msg: `"zone" is not defined`},
		{name: "required twice", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters]\nrequired = [\"z\", \"z\"]\n[tools.parameters.properties.z]\ntype = \"string\"\n",
			line: 8, field: "tools[0].parameters.required", msg: "listed twice"},
		{name: "default of wrong type", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters.properties.zone]\ntype = \"integer\"\ndefault = \"zero\"\n",
			line: 9, field: "tools[0].parameters.properties.zone.default", msg: "must be an integer to match the type, got string"},
		{name: "fractional integer default", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters.properties.zone]\ntype = \"integer\"\ndefault = 1.5\n",
			line: 9, field: "tools[0].parameters.properties.zone.default", msg: "got float"},
		{name: "nan default", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters.properties.r]\ntype = \"number\"\ndefault = nan\n",
			line: 9, field: "tools[0].parameters.properties.r.default"},
		{name: "datetime in array default", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.parameters.properties.r]\ntype = \"array\"\ndefault = [1979-05-27]\n",
			line: 9, field: "tools[0].parameters.properties.r.default", msg: "JSON cannot carry"},
		{name: "metadata not a string", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\n[tools.metadata]\npriority = 3\n",
			line: 8, field: "tools[0].metadata.priority", msg: "must be a string, got integer"},
		{name: "inline tool table", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\nparameters = { properties = { z = { type = \"int\" } } }\n",
			line: 7, field: "tools[0].parameters.properties.z.type", msg: `unknown type "int"`},
		{name: "inline tools array", body: "tools = [\n  { name = \"a\", binary = \"a\" },\n  { name = \"b\", binary = \"/b\" },\n]\n" + head,
			line: 1, field: "tools[1].binary", msg: "must be relative"},
		{name: "multi-line string hides a header", body: head + "[[tools]]\nname = \"a\"\nbinary = \"a\"\ndescription = \"\"\"\n[[tools]]\nbinary = \"x\"\n\"\"\"\n[[tools]]\nname = \"b\"\nbinary = \"../b\"\n",
			line: 13, field: "tools[1].binary", msg: "must stay inside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSkill(t, tt.body)
			_, err := Load(path)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load error = %v (%T), want *LoadError", err, err)
			}
			if le.File != path || le.Line != tt.line || le.Field != tt.field || !strings.Contains(le.Msg, tt.msg) {
				t.Errorf("got File %q Line %d Field %q Msg %q\nwant File %q Line %d Field %q Msg containing %q",
					le.File, le.Line, le.Field, le.Msg, path, tt.line, tt.field, tt.msg)
			}
		})
	}
}

func TestLoadErrorText(t *testing.T) {
	tests := []struct {
		err  LoadError
		want string
	}{
		{LoadError{File: "skills/demo/skill.toml", Line: 12, Field: "tools[1].binary", Msg: "must be relative to the skill directory"},
			"skills/demo/skill.toml:12: tools[1].binary: must be relative to the skill directory"},
		{LoadError{File: "skills/demo/skill.toml", Field: "skill", Msg: "required table [skill] is missing"},
			"skills/demo/skill.toml: skill: required table [skill] is missing"},
		{LoadError{File: "skills/demo/skill.toml", Line: 3, Msg: "strings cannot contain newlines"},
			"skills/demo/skill.toml:3: strings cannot contain newlines"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestLoadFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), FileName)
	_, err := Load(missing)
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, os.ErrNotExist) || le.File != missing {
		t.Errorf("missing file: err = %v, want *LoadError wrapping os.ErrNotExist", err)
	}
	big := writeSkill(t, "# "+strings.Repeat("x", MaxFileSize)+"\n")
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: err = %v", err)
	}
}

// TestLoadDirFixtures loads the shared fixture directory. Other packages
// keep fixtures there too, so it checks only the ones of this package.
func TestLoadDirFixtures(t *testing.T) {
	root := filepath.Join("..", "testdata", "skills")
	skills, errs := LoadDir(root)
	var demo *Skill
	for i := range skills {
		if skills[i].Name == "demo" {
			demo = &skills[i]
		}
	}
	if demo == nil {
		t.Fatalf("skills = %v, want demo among them", names(skills))
	}
	var tools []string
	for _, tool := range demo.Tools {
		tools = append(tools, tool.Name)
	}
	if want := []string{"sysinfo", "echo_args", "sleepy", "fail"}; !reflect.DeepEqual(tools, want) {
		t.Errorf("demo tools = %v, want %v", tools, want)
	}
	got := map[string]string{}
	for _, err := range errs {
		var le *LoadError
		if !errors.As(err, &le) {
			t.Errorf("error %v is not a *LoadError", err)
			continue
		}
		got[filepath.Base(filepath.Dir(le.File))] = err.Error()
	}
	for dir, want := range map[string]string{
		"broken-escape":      `:6: tools[0].binary: must stay inside the skill directory (no "..")`,
		"broken-syntax":      ":3: strings cannot contain newlines",
		"broken-unknown-key": `:11: tools[1].timeout: unknown key "timeout" (allowed: name, binary, description, timeout_ms, permissions, sandboxing, output, parameters, metadata)`,
	} {
		if want = filepath.Join(root, dir, FileName) + want; got[dir] != want {
			t.Errorf("error for %s = %q, want %q", dir, got[dir], want)
		}
	}
	if msg, ok := got["demo"]; ok {
		t.Errorf("demo failed to load: %s", msg)
	}
}

func TestLoadDir(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	skill := func(name string, tools ...string) string {
		s := "[skill]\nname = \"" + name + "\"\n"
		for _, tool := range tools {
			s += "[[tools]]\nname = \"" + tool + "\"\nbinary = \"bin/" + tool + "\"\n"
		}
		return s
	}
	write(FileName, skill("root-skill", "r"))
	write("b/"+FileName, skill("beta", "b1"))
	write("a/"+FileName, skill("zeta", "z1"))
	write("c/"+FileName, skill("beta", "c1"))        // same skill name as b: skipped
	write("d/"+FileName, skill("delta", "d1", "b1")) // tool b1 is beta's: skipped
	write("e/notes.txt", "not a skill")
	write("README.md", "not a directory")
	if err := os.Symlink(filepath.Join(root, "b"), filepath.Join(root, "link-to-b")); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, FileName), []byte(skill("linked", "l1")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(root, "f")); err != nil {
		t.Fatal(err)
	}

	skills, errs := LoadDir(root)
	if got, want := names(skills), []string{"beta", "linked", "root-skill", "zeta"}; !reflect.DeepEqual(got, want) {
		t.Errorf("skills = %v, want %v", got, want)
	}
	if len(errs) != 3 {
		t.Fatalf("errors = %v, want 3 (c, d, link-to-b)", errs)
	}
	for i, wantFile := range []string{"c", "d", "link-to-b"} {
		var le *LoadError
		if !errors.As(errs[i], &le) || !errors.Is(errs[i], ErrDuplicate) || le.File != filepath.Join(root, wantFile, FileName) {
			t.Errorf("errs[%d] = %v, want a duplicate in %s", i, errs[i], wantFile)
		}
	}
	if _, errs := LoadDir(filepath.Join(root, "missing")); len(errs) != 1 || !errors.Is(errs[0], os.ErrNotExist) {
		t.Errorf("missing root: errs = %v", errs)
	}
}

func names(skills []Skill) []string {
	var out []string
	for _, s := range skills {
		out = append(out, s.Name)
	}
	return out
}

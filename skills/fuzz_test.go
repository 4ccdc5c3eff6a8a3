package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLoad feeds arbitrary skill.toml contents to the loader: it must never
// panic, must fail only with a *LoadError pointing inside the file, and what
// it accepts must be safe to run and to describe to an LLM.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"demo", "broken-unknown-key", "broken-escape", "broken-syntax"} {
		if b, err := os.ReadFile(filepath.Join("..", "testdata", "skills", dir, FileName)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("[skill]\nname = \"s\"\n[[tools]]\nname = \"t\"\nbinary = \"b\"\n[tools.parameters.properties.p]\ntype = \"array\"\ndefault = [1, \"x\", {a = 1.5}]\n"))
	f.Add([]byte("tools = [{name = \"a\", binary = \"a\", parameters = {required = [\"x\"]}}]\n[skill]\nname = \"s\"\n"))
	f.Add([]byte("[skill]\nname = \"s\"\ndescription = '''\n[[tools]]\n'''\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parse("skill.toml", "/skills/s", data)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is %T, want *LoadError", err, err)
			}
			if lines := bytes.Count(data, []byte("\n")) + 1; le.Line < 0 || le.Line > lines {
				t.Fatalf("line %d outside a file of %d lines: %v", le.Line, lines, err)
			}
			if le.Msg == "" || !strings.HasPrefix(err.Error(), "skill.toml") {
				t.Fatalf("unhelpful error %q", err)
			}
			return
		}
		if !validName(s.Name) {
			t.Fatalf("accepted skill name %q", s.Name)
		}
		for _, tool := range s.Tools {
			if !validName(tool.Name) || binaryRule(tool.Binary) != "" || tool.TimeoutMS < 0 {
				t.Fatalf("accepted tool %+v", tool)
			}
			for name, p := range tool.Parameters.Properties {
				if !validName(name) || !knownType(p.Type) {
					t.Fatalf("accepted parameter %q %+v", name, p)
				}
				if _, ok := checkType(p.Type, p.Default); p.Default != nil && !ok {
					t.Fatalf("accepted default %#v for %s", p.Default, p.Type)
				}
			}
			if _, err := json.Marshal(tool.Schema()); err != nil {
				t.Fatalf("schema of %q does not marshal: %v", tool.Name, err)
			}
			if _, _, err := encodeArgs(tool.WithDefaults(nil)); err != nil && !strings.Contains(err.Error(), "NUL") {
				t.Fatalf("defaults of %q do not encode: %v", tool.Name, err)
			}
		}
	})
}

// FuzzValidate feeds arbitrary JSON arguments to Validate: it must never
// panic, and arguments it accepts must reach a binary intact.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"req":"x"}`, `{"req":"x","i":3,"n":2.5,"b":true,"a":[1,"2"],"o":{"k":null}}`,
		`{"req":1}`, `{"i":1e400}`, `{"i":9223372036854775808}`, `{"i":-0.0}`, `{"zzz":[]}`, `{"req":"a\u0000b"}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, useNumber bool) {
		dec := json.NewDecoder(bytes.NewReader(data))
		if useNumber {
			dec.UseNumber()
		}
		var args map[string]any
		if dec.Decode(&args) != nil {
			return
		}
		err := typedTool.Validate(args)
		if err != nil {
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParamError", err, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, `"typed"`) || !strings.Contains(msg, "Required: [req]") {
				t.Fatalf("message lacks the tool or its parameters: %q", msg)
			}
			if again := typedTool.Validate(args); again.Error() != msg {
				t.Fatalf("message not deterministic: %q then %q", msg, again)
			}
			return
		}
		argv, stdin, err := encodeArgs(typedTool.WithDefaults(args))
		if err != nil {
			if strings.Contains(err.Error(), "NUL") {
				return
			}
			t.Fatalf("valid arguments %s do not encode: %v", data, err)
		}
		if len(argv) != 2*len(args) {
			t.Fatalf("argv %q for %d arguments", argv, len(args))
		}
		var back map[string]any
		if err := json.Unmarshal(stdin, &back); err != nil || len(back) != len(args) {
			t.Fatalf("stdin %q does not decode to the %d arguments: %v", stdin, len(args), err)
		}
	})
}

// FuzzSanitize checks that sanitized text is valid UTF-8 without control
// characters other than newline, carriage return and tab, and that
// sanitizing twice changes nothing.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"plain", "a\x00b\x1b[31m", "\xff\xfe", "tab\tnl\n", "\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Sanitize(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", s, got)
		}
		for _, r := range got {
			if dropRune(r) {
				t.Fatalf("Sanitize(%q) kept %U", s, r)
			}
		}
		if Sanitize(got) != got {
			t.Fatalf("Sanitize is not idempotent on %q", s)
		}
	})
}

// FuzzValidateID checks that an accepted id is safe as one path element.
func FuzzValidateID(f *testing.F) {
	for _, s := range []string{"conv-1", "..", "a/b", "", "x\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateID("id", id) != nil {
			return
		}
		if filepath.Base(id) != id || filepath.Clean(id) != id || id == ".." || id == "." || strings.ContainsRune(id, 0) || len(id) > MaxIDLen {
			t.Fatalf("accepted unsafe id %q", id)
		}
	})
}

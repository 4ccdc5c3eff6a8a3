package skills

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func writeSkillDir(t *testing.T, root, name, body string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, FileName)
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func defNames(defs []ToolDef) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

func TestCatalogReloadsOnlyOnChange(t *testing.T) {
	root := t.TempDir()
	f := writeSkillDir(t, root, "a", "[skill]\nname = \"a\"\n[[tools]]\nname = \"one\"\nbinary = \"bin/one\"\n")
	c := NewCatalog(root)
	if got := defNames(c.Defs()); !reflect.DeepEqual(got, []string{"one"}) {
		t.Fatalf("defs = %v", got)
	}
	c.Defs()
	c.Skills()
	if n := c.Loads(); n != 1 {
		t.Fatalf("unchanged files loaded %d times, want 1", n)
	}

	// Same size, new mtime: a change.
	if err := os.WriteFile(f, []byte("[skill]\nname = \"a\"\n[[tools]]\nname = \"two\"\nbinary = \"bin/one\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(f, future, future); err != nil {
		t.Fatal(err)
	}
	if got := defNames(c.Defs()); !reflect.DeepEqual(got, []string{"two"}) {
		t.Fatalf("after edit defs = %v, want [two]", got)
	}
	// A new skill directory is a change too.
	writeSkillDir(t, root, "b", "[skill]\nname = \"b\"\n[[tools]]\nname = \"three\"\nbinary = \"x\"\n")
	if got := defNames(c.Defs()); !reflect.DeepEqual(got, []string{"three", "two"}) {
		t.Fatalf("after add defs = %v", got)
	}
	if n := c.Loads(); n != 3 {
		t.Fatalf("loads = %d, want 3", n)
	}
	// A broken edit drops the skill and reports it.
	if err := os.WriteFile(f, []byte("[skill]\nname = \"a\"\nbogus = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(f, future.Add(time.Hour), future.Add(time.Hour))
	skills, errs := c.Skills()
	if len(skills) != 1 || skills[0].Name != "b" || len(errs) != 1 {
		t.Fatalf("after broken edit skills = %v errs = %v", names(skills), errs)
	}
}

func TestCatalogDuplicatesAcrossDirs(t *testing.T) {
	r1, r2 := t.TempDir(), t.TempDir()
	writeSkillDir(t, r1, "a", "[skill]\nname = \"a\"\n[[tools]]\nname = \"one\"\nbinary = \"x\"\n")
	writeSkillDir(t, r2, "b", "[skill]\nname = \"b\"\n[[tools]]\nname = \"one\"\nbinary = \"x\"\n")
	skills, errs := NewCatalog(r1, r2).Skills()
	if len(skills) != 1 || skills[0].Name != "a" {
		t.Fatalf("skills = %v, want only a", names(skills))
	}
	if len(errs) != 1 {
		t.Fatalf("errs = %v, want one duplicate", errs)
	}
	var le *LoadError
	if !errors.As(errs[0], &le) || !errors.Is(le, ErrDuplicate) || le.Field != "tools[0].name" {
		t.Fatalf("err = %#v", errs[0])
	}
}

func TestToolDefExtension(t *testing.T) {
	c := NewCatalog(filepath.Join("..", "testdata", "skills"))
	var probe *ToolDef
	for _, d := range c.Defs() {
		if d.Name == "net_probe" {
			probe = &d
		}
	}
	if probe == nil {
		t.Fatal("net_probe not loaded from testdata/skills/listing")
	}
	want := Extension{Source: SourceSkill, Skill: "listing", Version: "0.1.0", Permissions: []string{"network", "shell"},
		Sandboxing: SandboxNone, Metadata: map[string]string{"category": "network"}}
	if !reflect.DeepEqual(probe.Evoclaw, want) {
		t.Fatalf("extension = %#v, want %#v", probe.Evoclaw, want)
	}
	// Handing out a copy: changing it does not change the catalog.
	probe.Evoclaw.Permissions[0] = "changed"
	probe.Parameters["type"] = "changed"
	for _, d := range c.Defs() {
		if d.Name == "net_probe" && (d.Evoclaw.Permissions[0] != "network" || d.Parameters["type"] != "object") {
			t.Fatalf("cached definition was modified through a copy: %#v", d)
		}
	}
}

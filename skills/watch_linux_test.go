//go:build linux

package skills

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// On Linux an unchanged catalog answers lookups without scanning its
// directories, and every kind of change is still seen by the next lookup.
func TestCatalogWatchSeesEveryChangeWithoutScanning(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	f := writeSkillDir(t, root, "a", "[skill]\nname = \"a\"\n[[tools]]\nname = \"one\"\nbinary = \"x\"\n")
	// b's skill.toml is a symbolic link to a file outside the root.
	target := filepath.Join(outside, "b.toml")
	if err := os.WriteFile(target, []byte("[skill]\nname = \"b\"\n[[tools]]\nname = \"bee\"\nbinary = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(root, "b", FileName)); err != nil {
		t.Fatal(err)
	}
	c := NewCatalog(root)
	want := func(step string, names ...string) {
		t.Helper()
		if got := defNames(c.Defs()); !reflect.DeepEqual(got, names) {
			t.Fatalf("%s: defs = %v, want %v", step, got, names)
		}
	}
	want("first load", "bee", "one")
	scans := c.scans
	for range 50 {
		if _, ok := c.Tool("one"); !ok {
			t.Fatal("tool one is gone")
		}
	}
	if c.scans != scans {
		t.Fatalf("50 lookups of an unchanged catalog scanned %d times, want 0", c.scans-scans)
	}

	steps := []struct {
		name   string
		change func() error
		want   []string
	}{
		{"edit in place, same size", func() error {
			return os.WriteFile(f, []byte("[skill]\nname = \"a\"\n[[tools]]\nname = \"two\"\nbinary = \"x\"\n"), 0o644)
		}, []string{"bee", "two"}},
		{"edit the target of a symbolic link", func() error {
			return os.WriteFile(target, []byte("[skill]\nname = \"b\"\n[[tools]]\nname = \"bea\"\nbinary = \"x\"\n"), 0o644)
		}, []string{"bea", "two"}},
		{"new skill directory", func() error {
			return os.MkdirAll(filepath.Join(root, "c"), 0o755)
		}, []string{"bea", "two"}},
		{"skill.toml written into the new directory", func() error {
			return os.WriteFile(filepath.Join(root, "c", FileName), []byte("[skill]\nname = \"c\"\n[[tools]]\nname = \"sea\"\nbinary = \"x\"\n"), 0o644)
		}, []string{"bea", "sea", "two"}},
		{"skill.toml replaced by a rename", func() error {
			tmp := filepath.Join(root, "a", "skill.toml.new")
			if err := os.WriteFile(tmp, []byte("[skill]\nname = \"a\"\n[[tools]]\nname = \"three\"\nbinary = \"x\"\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, f)
		}, []string{"bea", "sea", "three"}},
		{"skill directory removed", func() error {
			return os.RemoveAll(filepath.Join(root, "c"))
		}, []string{"bea", "three"}},
	}
	for _, s := range steps {
		if err := s.change(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want(s.name, s.want...)
	}
}

// A root that does not exist cannot be watched: every lookup scans, so the
// root appearing later is seen.
func TestCatalogMissingRootScansEveryLookup(t *testing.T) {
	root := filepath.Join(t.TempDir(), "later")
	c := NewCatalog(root)
	if got := c.Defs(); len(got) != 0 {
		t.Fatalf("defs of a missing root = %v", defNames(got))
	}
	scans := c.scans
	c.Defs()
	if c.scans != scans+1 {
		t.Fatalf("a lookup with a missing root scanned %d times, want 1", c.scans-scans)
	}
	writeSkillDir(t, root, "a", "[skill]\nname = \"a\"\n[[tools]]\nname = \"one\"\nbinary = \"x\"\n")
	if got := defNames(c.Defs()); !reflect.DeepEqual(got, []string{"one"}) {
		t.Fatalf("after the root appeared defs = %v", got)
	}
	// Now it is watched.
	scans = c.scans
	c.Defs()
	if c.scans != scans {
		t.Fatalf("a watched catalog scanned %d times, want 0", c.scans-scans)
	}
}

package skills

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"
)

// TestToolsetGeneration: the generation moves with every change of what
// List returns (a Go tool added, a skill edited or added) and with nothing
// else, so that a caller may keep what it built from Defs per generation.
func TestToolsetGeneration(t *testing.T) {
	root := t.TempDir()
	f := writeSkillDir(t, root, "a", "[skill]\nname = \"a\"\n[[tools]]\nname = \"one\"\nbinary = \"bin/one\"\n")
	ts := NewToolset(NewCatalog(root), ExecOptions{})
	run := func(context.Context, map[string]any) Output { return Output{} }
	steps := []struct {
		name   string
		change func()
		moves  bool
		want   []string
	}{
		{"nothing changed", func() {}, false, []string{"one"}},
		{"a Go tool added", func() {
			if err := ts.Add(GoTool{Tool: Tool{Name: "clock"}, Run: run}); err != nil {
				t.Fatal(err)
			}
		}, true, []string{"clock", "one"}},
		{"still nothing", func() {}, false, []string{"clock", "one"}},
		{"a skill edited", func() {
			if err := os.WriteFile(f, []byte("[skill]\nname = \"a\"\n[[tools]]\nname = \"two\"\nbinary = \"bin/one\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			future := time.Now().Add(time.Hour)
			if err := os.Chtimes(f, future, future); err != nil {
				t.Fatal(err)
			}
		}, true, []string{"clock", "two"}},
		{"a skill added", func() {
			writeSkillDir(t, root, "b", "[skill]\nname = \"b\"\n[[tools]]\nname = \"three\"\nbinary = \"x\"\n")
		}, true, []string{"clock", "three", "two"}},
		{"nothing after all that", func() {}, false, []string{"clock", "three", "two"}},
	}
	last := ts.Generation()
	for _, s := range steps {
		s.change()
		gen := ts.Generation()
		if moved := gen != last; moved != s.moves {
			t.Fatalf("%s: generation %d → %d, want moved %v", s.name, last, gen, s.moves)
		}
		if got := defNames(ts.Defs()); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s: defs %v, want %v", s.name, got, s.want)
		}
		if again := ts.Generation(); again != gen {
			t.Fatalf("%s: listing moved the generation %d → %d", s.name, gen, again)
		}
		last = gen
	}
	if (&Toolset{}).Generation() != 0 {
		t.Fatal("a toolset without catalog or Go tools has generation 0")
	}
}

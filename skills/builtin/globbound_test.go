package builtin

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Braces that expand beyond the bound are refused before any walk.
func TestGlobBounds(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a": "x", "b.go": "x"})
	glob, err := NewGlob(Options{Dir: ws, FileTimeout: 300 * time.Millisecond, MaxFileCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkPatterns(t, glob, []patternCase{
		{"4^40 alternatives", strings.Repeat("{a,b,c,d}", 40), wire.ErrInvalidParams, "more than 1024"},
		{"nested", strings.Repeat("{a,{b,c}}", 7), wire.ErrInvalidParams, "more than 1024"},
		{"long", strings.Repeat("a", 1025), wire.ErrInvalidParams, "limit of 1024"},
		{"at the bound", strings.Repeat("{a,b,c,d}", 5), "", "a"},
		{"typical", "*.{go,md}", "", "b.go"},
	})
	// The probe's wedge: four such calls, then a benign one.
	for range 4 {
		glob.Run(context.Background(), map[string]any{"pattern": strings.Repeat("{a,b,c,d}", 40)})
	}
	waitNotBusy(t, glob, map[string]any{"pattern": "*"})
}

// find's pattern is held to glob's bound: its matcher's work on each
// name grows with the pattern, and each entry of a large tree pays it.
func TestFindPatternBound(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.toml": "x"})
	find, err := NewFind(Options{Dir: ws})
	if err != nil {
		t.Fatal(err)
	}
	checkPatterns(t, find, []patternCase{
		{"long", strings.Repeat("*a", 513), wire.ErrInvalidParams, "limit of 1024"},
		{"long and bad", strings.Repeat("*a", 513) + "[", wire.ErrInvalidParams, "bad pattern"},
		{"at the bound", strings.Repeat("*", 1019) + ".toml", "", "a.toml"},
		{"typical", "*.toml", "", "a.toml"},
	})
}

// cancelOps cancels its context at its n-th Stat.
type cancelOps struct {
	FileOps
	n      atomic.Int32
	cancel context.CancelFunc
}

func (c *cancelOps) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
	return c.FileOps.Stat(ctx, name)
}

// A glob whose context ends mid-walk stops and says so, instead of
// taking the errors for missing files and expanding on.
func TestGlobStopsOnContext(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a": "x"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ops := &cancelOps{FileOps: Local{Dir: ws}, cancel: cancel}
	ops.n.Store(10)
	o, err := Options{Dir: ws, Files: ops}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	out := o.glob(ctx, map[string]any{"pattern": strings.Repeat("{a,b,c,d}", 5)})
	if out.ErrorType() != wire.ErrInterrupted {
		t.Fatalf("got %s %q, want interrupted", out.ErrorType(), text(out))
	}
	if n := -ops.n.Load(); n > 0 {
		t.Fatalf("%d more Stats after the context ended", n)
	}
}

func TestBraceAlternatives(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    int
	}{
		{"", 1},
		{"**/*.go", 1},
		{"*.{go,md}", 2},
		{"{a,b}/{c,d,e}", 6},
		{"{a,{b,c}}", 3},
		{"{a,b{c,d}}x{e,f}", 6},
		{`\{a,b\}`, 1},
		{"{a,b", 1},
		{"a}b", 1},
		{"{}", 1},
		{strings.Repeat("{a,b,c,d}", 5), 1024},
		{strings.Repeat("{a,b,c,d}", 40), maxGlobAlternatives + 1},
		{"{" + strings.Repeat("a,", 2000) + "b}", maxGlobAlternatives + 1},
	} {
		if got := braceAlternatives(tc.pattern); got != tc.want {
			t.Errorf("braceAlternatives(%q) = %d, want %d", tc.pattern, got, tc.want)
		}
	}
}

// text is an output's first block's text (an error's message).
func text(out skills.Output) string {
	if len(out.Content) == 0 {
		return ""
	}
	return out.Content[0].Text
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// patternCase is a call with a pattern and the answer it wants: an error
// of code, or a success (code ""), containing want.
type patternCase struct {
	name, pattern string
	code          wire.ErrorType
	want          string
}

func checkPatterns(t *testing.T, tool skills.GoTool, cases []patternCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := tool.Run(context.Background(), map[string]any{"pattern": tc.pattern})
			if out.ErrorType() != tc.code || !strings.Contains(text(out), tc.want) {
				t.Fatalf("got %s %q, want %s containing %q", out.ErrorType(), text(out), tc.code, tc.want)
			}
		})
	}
}

// waitNotBusy fails unless, within a few seconds, a benign call of tool
// (whose gate has one slot) is no longer refused as busy.
func waitNotBusy(t *testing.T, tool skills.GoTool, args map[string]any) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		out := tool.Run(context.Background(), args)
		if out.ErrorType() == "" {
			return
		}
		if out.ErrorType() != wire.ErrBusy || time.Now().After(deadline) {
			t.Fatalf("benign %s: %s %q", tool.Tool.Name, out.ErrorType(), text(out))
		}
	}
}

package builtin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// A pattern too large to run is refused up front, naming the bound.
func TestGrepPatternBounds(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"a.txt": "hello world\n"})
	grep, err := NewGrep(Options{Dir: ws, FileTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	checkPatterns(t, grep, []patternCase{
		{"long text", strings.Repeat("x", 4097), wire.ErrInvalidParams, "limit of 4096"},
		{"large program", strings.Repeat("[a-z]{1000}", 200) + "c", wire.ErrInvalidParams, "limit of 2000"},
		{"large program, short text", `\w{1000}\w{1000}`, wire.ErrInvalidParams, "limit of 2000"},
		{"long literal is fine", strings.Repeat("x", 4096), "", "no matches"},
		{"typical", `hel+o\s+w`, "", "a.txt:1: hello world"},
	})
}

// A line too long for the pattern's budget is not matched, and the
// answer says so; lines that cannot match (no literal prefix) or that a
// literal searches in linear time are searched as before.
func TestGrepLineBudget(t *testing.T) {
	ws := t.TempDir()
	long := strings.Repeat("a", 1<<20-1)
	writeFiles(t, ws, map[string]string{"big.txt": "ab c\n" + long + "\n" + "aac\n"})
	grep, err := NewGrep(Options{Dir: ws, FileTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pattern string
		want          []string // in the answer, in order
		truncated     bool
	}{
		{"worst case over budget", "[ab]{100}(?:c|$)", []string{"no matches", "[1 line longer than ", " bytes was not searched with this pattern (it compiles to "}, true},
		{"short lines still searched", "(?:[ab]{2}|[ab]{60}x)(?:c|$)", []string{"big.txt:3: aac\n[1 line longer than"}, true},
		{"literal prefix absent", "x[ab]{100}c", []string{"no matches"}, false},
		{"literal", strings.Repeat("a", 100), []string{"big.txt:2: aaaa"}, false},
		{"needed literal absent", `\w+(?:Handler|Func)\(`, []string{"no matches"}, false},
		{"needed literal present", `(?:a{2}|a{60}x)a*(?:Handler|c)`, []string{"big.txt:3: aac\n[1 line longer"}, true},
		{"long literal", strings.Repeat("a", 4096), []string{"big.txt:2: aaaa"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out := grep.Run(context.Background(), map[string]any{"pattern": tc.pattern})
			got, at := text(out), 0
			if out.ErrorType() != "" {
				t.Fatalf("after %v: %s %q", time.Since(start), out.ErrorType(), got)
			}
			for _, w := range tc.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("answer %q lacks %q", got, w)
				}
				at += i + len(w)
			}
			if strings.Contains(got, "not searched") != tc.truncated || out.Truncated != tc.truncated {
				t.Fatalf("truncated %v, answer %q; want truncated %v", out.Truncated, got, tc.truncated)
			}
		})
	}
}

// A line longer than grep reads is skipped and counted, and the lines
// after it are still searched. Before, the first such line ended the
// search of its file without a word: "no matches" for a needle on the
// next line.
func TestGrepLineLongerThanItReads(t *testing.T) {
	ws := t.TempDir()
	huge := strings.Repeat("x", maxGrepLine) + "needle"
	writeFiles(t, ws, map[string]string{
		"a.txt": "needle first\n" + huge + "\nneedle after\r\n" + huge + "\nneedle last",
		"b.txt": "needle\n" + huge, // the long line is the last, without a newline
		"c.txt": strings.Repeat("y", maxGrepLine) + "\r\nneedle at the bound\n",
	})
	grep, err := NewGrep(Options{Dir: ws, FileTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pattern string
		want          []string
	}{
		{"literal", "needle", []string{"a.txt:1: needle first", "a.txt:3: needle after", "a.txt:5: needle last", "b.txt:1: needle", "c.txt:2: needle at the bound"}},
		{"regexp", "ne+dl[e]", []string{"a.txt:1: needle first", "a.txt:3: needle after", "a.txt:5: needle last", "b.txt:1: needle", "c.txt:2: needle at the bound"}},
		{"anchored, without the carriage return", "^needle (after|at the bound)$", []string{"a.txt:3: needle after", "c.txt:2: needle at the bound"}},
		{"a line at the bound is searched", "^y+$", []string{"c.txt:1: " + strings.Repeat("y", maxShownLine) + "…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := grep.Run(context.Background(), map[string]any{"pattern": tc.pattern})
			if out.ErrorType() != "" {
				t.Fatalf("%s %q", out.ErrorType(), text(out))
			}
			got := strings.Split(text(out), "\n")
			note := fmt.Sprintf("[3 lines longer than %d bytes were not searched", maxGrepLine) // the huge lines of a.txt and b.txt
			if len(got) != len(tc.want)+1 || !strings.HasPrefix(got[len(got)-1], note) || !out.Truncated {
				t.Fatalf("answer %q (truncated %v), want %q and a note starting %q", got, out.Truncated, tc.want, note)
			}
			for i, w := range tc.want {
				if got[i] != w {
					t.Errorf("line %d = %q, want %q", i+1, got[i], w)
				}
			}
		})
	}
}

// After its deadline a grep stops within about one Match, and only then
// frees its slot of the gate: the next call is not refused as busy.
func TestGrepStopsAfterDeadline(t *testing.T) {
	ws := t.TempDir()
	// Each line is under the budget of the pattern but costs tens of
	// milliseconds: one file is many seconds of work.
	pat := "[ab]{900}[cd]" // no literal to look for first
	line := strings.Repeat("a", 2000) + "\n"
	for i := range 4 {
		writeFiles(t, ws, map[string]string{fmt.Sprintf("f%d.txt", i): strings.Repeat(line, 500)})
	}
	grep, err := NewGrep(Options{Dir: ws, FileTimeout: 300 * time.Millisecond, MaxFileCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out := grep.Run(context.Background(), map[string]any{"pattern": pat}); out.ErrorType() != wire.ErrTimeout {
		t.Fatalf("worst case: %s %q, want a timeout", out.ErrorType(), text(out))
	}
	waitNotBusy(t, grep, map[string]any{"pattern": "zzz"})
}

// BenchmarkGrepLineBudget measures the worst case of one Match at the
// budget: a pattern all of whose instructions stay alive at every byte.
func BenchmarkGrepLineBudget(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		pat := strings.Repeat("(?:a|b)", n) + "c"
		m, err := newLineMatcher(pat)
		if err != nil {
			b.Fatal(err)
		}
		line := []byte(strings.Repeat("a", m.maxLine))
		b.Run(fmt.Sprintf("prog=%d/line=%d", m.prog, m.maxLine), func(b *testing.B) {
			for b.Loop() {
				if m.match(line) || m.tooLong != 0 {
					b.Fatal("matched or skipped")
				}
			}
		})
	}
}

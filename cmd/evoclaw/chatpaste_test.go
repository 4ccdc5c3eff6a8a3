package main

import (
	"strings"
	"testing"
)

func TestPasteJoin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"typed Enter", []string{"hello\r"}, "hello\r"},
		{"typed lines, one read each", []string{"a\r", "b\r"}, "a\rb\r"},
		{"bracketed paste", []string{pasteStart + "one\ntwo\r\nthree\r" + pasteEnd}, "one␤two␤three␤"},
		{"bracketed paste then Enter", []string{pasteStart + "one\ntwo" + pasteEnd, "\r"}, "one␤two\r"},
		{"brackets split across reads", []string{"\x1b[2", "00~x\ny\x1b", "[201", "~\r"}, "x␤y\r"},
		{"paste without brackets", []string{"alpha\nbeta\ngamma"}, "alpha␤beta␤gamma"},
		{"paste without brackets ending in a line break", []string{"alpha\nbeta\n"}, "alpha␤beta\n"},
		{"line break just before the end bracket", []string{pasteStart + "a\n", pasteEnd}, "a␤"},
		{"other escapes pass", []string{"\x1b[A\x1b[20x\x1b"}, "\x1b[A\x1b[20x\x1b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p pasteJoin
			var got strings.Builder
			for _, c := range tc.chunks {
				got.Write(p.feed([]byte(c)))
			}
			got.Write(p.carry)
			if got.String() != tc.want {
				t.Fatalf("got %q, want %q", got.String(), tc.want)
			}
		})
	}
}

// FuzzPasteJoin: whatever the terminal sends, in whatever two reads,
// nothing but line breaks and paste brackets is changed or lost.
func FuzzPasteJoin(f *testing.F) {
	f.Add([]byte(pasteStart+"a\nb"+pasteEnd+"\r"), 3)
	f.Add([]byte("x\r\ny\x1b[20"), 1)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		var p pasteJoin
		if split < 0 || split > len(in) {
			split = len(in) / 2
		}
		out := string(p.feed(in[:split])) + string(p.feed(in[split:])) + string(p.carry)
		// what is left without line breaks and brackets; stripped until
		// none is left, as removing one can join the bytes around it
		// into another
		bare := func(s string) string {
			for {
				t := s
				for _, x := range []string{pasteStart, pasteEnd, pastedBreak, "\r", "\n"} {
					t = strings.ReplaceAll(t, x, "")
				}
				if t == s {
					return s
				}
				s = t
			}
		}
		if bare(out) != bare(string(in)) && !strings.Contains(string(in), pastedBreak) {
			t.Fatalf("%q gave %q", in, out)
		}
	})
}

func TestHistoryLines(t *testing.T) {
	long := strings.Repeat("y", maxHistoryLine+1)
	in := "old one\n" + long + "\nbad \xff\n\nafter long\n"
	if got, want := historyLines(in), "old one\nafter long\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

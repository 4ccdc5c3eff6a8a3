package mcptools

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseGroups: a group file of any content parses without panic into
// groups and one error per other non-empty line, and what it parses
// writes back to lines that parse to the same groups.
func FuzzParseGroups(f *testing.F) {
	f.Add("4242 6873581 6098db55-f8a9-440c-956f-50a89e64fd42\n")
	f.Add("1 2 x\n-5 3 y\n12 -1 z\n12 3\n\n7 8 a b\n")
	f.Fuzz(func(t *testing.T, in string) {
		groups, errs := parseGroups([]byte(in))
		lines := 0
		for _, l := range strings.Split(in, "\n") {
			if l != "" {
				lines++
			}
		}
		if len(groups)+len(errs) != lines {
			t.Fatalf("%d groups and %d errors from %d lines", len(groups), len(errs), lines)
		}
		var b strings.Builder
		for _, g := range groups {
			if g.Pgid <= 1 || g.BootID == "" {
				t.Fatalf("group %+v parsed", g)
			}
			b.WriteString(groupLine(g))
		}
		again, errs := parseGroups([]byte(b.String()))
		if len(errs) > 0 || !slices.Equal(again, groups) {
			t.Fatalf("written back %q parses to %+v, %v; want %+v", b.String(), again, errs, groups)
		}
	})
}

package webtools

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// reconstructing is a page that makes the HTML5 tree builder copy n
// different formatting elements into each of its blocks, size bytes long.
func reconstructing(n, size int) string {
	var b strings.Builder
	b.WriteString("<p>")
	for i := range n {
		fmt.Fprintf(&b, "<b class=c%d>", i)
	}
	for b.Len() < size {
		b.WriteString("<p>x")
	}
	return b.String()
}

// TestWebfetchParseBounded: pages that make the HTML parser build far
// more nodes than they have bytes cost a fetch tens of MiB, not hundreds
// or the node: only the part of the page that the parser can build within
// maxParseNodes is parsed, and the answer is marked cut. Before, 40 KB of
// formatting copied into every block allocated about 370 MiB, 2 MiB of it
// tens of GB; 2 MiB of nested formatting in every paragraph 527 MiB; five
// such fetches in one turn took a real node from 35 MB to 1.5 GB.
func TestWebfetchParseBounded(t *testing.T) {
	const maxAlloc = 128 << 20
	for _, tc := range []struct{ name, body string }{
		{"formatting copied into every block", reconstructing(300, 40<<10)},
		{"nested formatting in every paragraph", strings.Repeat("<p><b><i><u><s>", DefaultMaxBytes/15)},
		{"a paragraph every four bytes", strings.Repeat("<p>x", DefaultMaxBytes/4)},
		{"a table row every eleven bytes", strings.Repeat("<table><tr>", DefaultMaxBytes/11)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := server(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte(tc.body))
			})
			tool := fetchTool(t, Config{AllowNetworks: []string{"127.0.0.1/32"}}, nil)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			out := fetch(t, tool, srv.URL+"/page")
			runtime.ReadMemStats(&m1)
			if out.ErrorType() != "" || !out.Truncated || !strings.Contains(out.Text(), "[cut at") {
				t.Fatalf("error %q %q, truncated %v", out.ErrorType(), out.ErrorText(), out.Truncated)
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > maxAlloc {
				t.Errorf("allocated %d MiB for a page of %d KiB, want at most %d MiB", alloc>>20, len(tc.body)>>10, maxAlloc>>20)
			}
		})
	}
}

// TestParseBoundOrdinary: an ordinary page is parsed whole, or, when it
// is so large that it is not, what is parsed still fills the answer.
func TestParseBoundOrdinary(t *testing.T) {
	para := func(i int) string {
		return fmt.Sprintf("<p>Step %d: open <b>valve %d</b>, then <a href=\"/v/%d\">check</a> the <em>flow</em>.</p>\n", i, i, i)
	}
	var small, large strings.Builder
	for i := 0; small.Len() < 256<<10; i++ {
		small.WriteString(para(i))
	}
	for i := 0; large.Len() < DefaultMaxBytes; i++ {
		large.WriteString(para(i))
	}
	if n := parseBound(small.String()); n != small.Len() {
		t.Errorf("a page of %d KiB: parsed %d bytes of it, want all", small.Len()>>10, n)
	}
	md, cut, err := toMarkdown(large.String(), "http://example.org/", DefaultMaxChars, DefaultMaxBytes)
	if err != nil || !cut || len([]rune(md)) < DefaultMaxChars {
		t.Errorf("a page of %d KiB: %d characters of Markdown, cut %v, %v; want at least %d", large.Len()>>10, len([]rune(md)), cut, err, DefaultMaxChars)
	}
}

// FuzzParseBound: the bound is a cut between tokens within the page, and
// the part it keeps is kept whole when parsed again.
func FuzzParseBound(f *testing.F) {
	f.Add(page)
	f.Add(reconstructing(30, 4<<10))
	f.Add("<a href=1>x<a href=2>y<b><b><b><b>z</b><script>1<2</script><p>x")
	f.Fuzz(func(t *testing.T, s string) {
		n := parseBound(s)
		if n < 0 || n > len(s) {
			t.Fatalf("parseBound(%q) = %d", s, n)
		}
		if m := parseBound(s[:n]); m != n {
			t.Fatalf("parseBound(%q) = %d, but of its first %d bytes %d", s, n, n, m)
		}
	})
}

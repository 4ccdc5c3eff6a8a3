package webtools

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
)

// TestWebfetchBoundedConversion: a page built to make the Markdown larger
// than itself (relative links and images under a long URL, long addresses
// or line breaks inside deep quotes and lists) costs webfetch memory in
// proportion to the bounded body, not to what the converter would write.
// The bound: the parsed page (some 40 bytes a tag) plus the converter's
// work, at most workPerByte units a byte of some 30 bytes each, plus a
// fixed allowance for the request.
func TestWebfetchBoundedConversion(t *testing.T) {
	const maxBytes = 64 << 10
	fill := func(unit string) string { return strings.Repeat(unit, maxBytes/len(unit)) }
	deep := strings.Repeat("<blockquote>", 400)
	for _, tc := range []struct {
		name, path, body string
	}{
		{"links under a long URL", "/" + strings.Repeat("p", 7000) + "/page", fill(`<a href="x">y</a>`)},
		{"images under a long URL", "/" + strings.Repeat("p", 7000) + "/page", fill(`<img src="x">`)},
		{"anchors without href", "/" + strings.Repeat("p", 7000) + "/page", fill(`<a>`)},
		{"long href in deep quotes", "/page", deep + `<a href="` + strings.Repeat("a/", maxBytes/2-2500) + `">y</a>`},
		{"line breaks in deep quotes", "/page", deep + fill("x<br>")},
		{"line breaks in deep lists", "/page", strings.Repeat("<ul><li>", 200) + fill("x<br>")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := server(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte(tc.body))
			})
			tool := fetchTool(t, Config{AllowNetworks: []string{"127.0.0.1/32"}, MaxBytes: maxBytes}, nil)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			out := fetch(t, tool, srv.URL+tc.path)
			runtime.ReadMemStats(&m1)
			if out.ErrorType() != "" {
				t.Fatalf("error %s", out.ErrorText())
			}
			if !out.Truncated || len([]rune(out.Text())) > DefaultMaxChars+len(tc.path)+200 {
				t.Errorf("truncated %v, %d characters", out.Truncated, len(out.Text()))
			}
			alloc, bound := m1.TotalAlloc-m0.TotalAlloc, uint64(40+30*workPerByte)*maxBytes+4<<20
			if alloc > bound {
				t.Errorf("allocated %d MiB for a %d KiB page, want at most %d MiB", alloc>>20, len(tc.body)>>10, bound>>20)
			}
		})
	}
}

// TestToMarkdownOrdinary: a page within the bounds converts exactly as the
// converter alone would; text nested past maxNest is kept, flattened.
func TestToMarkdownOrdinary(t *testing.T) {
	const base = "http://example.org/dir/page"
	for _, p := range []string{
		page,
		`<ul><li>a<ul><li>b<ol start=3><li>c<blockquote>q<br>r</blockquote></ol></ul></ul><p>x <img src=i.png alt=I> <a>y</a> <a href="">z</a>`,
		`<table><tr><td><a href="/t">t</a></table><pre>  x
  y</pre><h2>H</h2>` + strings.Repeat(`<p>para <a href="?q=1&r=2#f">l</a></p>`, 200),
	} {
		want, err := htmltomarkdown.ConvertString(p, converter.WithDomain(base))
		if err != nil {
			t.Fatal(err)
		}
		got, cut, err := toMarkdown(p, base, DefaultMaxChars, DefaultMaxBytes)
		if err != nil || cut || got != want {
			t.Errorf("toMarkdown(%.40q) = %q cut %v %v, want %q", p, got, cut, err, want)
		}
	}
	deep := strings.Repeat("<blockquote>", 3*maxNest) + "deep<br>text"
	got, cut, err := toMarkdown(deep, base, DefaultMaxChars, DefaultMaxBytes)
	if err != nil || cut || !strings.Contains(got, strings.Repeat("> ", maxNest)+"deep") || strings.Contains(got, strings.Repeat("> ", maxNest+1)) {
		t.Errorf("deep quotes = %q cut %v %v", got, cut, err)
	}
}

package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestAssetsKeepThePolicy reads the embedded files for what the CSP would
// block or what would turn data into markup: inline scripts and styles,
// event-handler attributes, and the DOM calls that parse HTML.
func TestAssetsKeepThePolicy(t *testing.T) {
	forbidden := map[string]*regexp.Regexp{
		".html": regexp.MustCompile(`(?i)\sstyle=|\son[a-z]+=|<style|javascript:|https?://`),
		".js":   regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\("style"|https?://`),
		".css":  regexp.MustCompile(`@import|url\(|https?://`),
	}
	scriptTag := regexp.MustCompile(`(?i)<script[^>]*>`)
	// The one URL the scripts may name: SVG's namespace, which is no fetch.
	const svgNS = `"http://www.w3.org/2000/svg"`
	n := 0
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		n++
		text := strings.ReplaceAll(string(b), svgNS, `""`)
		for _, tag := range scriptTag.FindAllString(text, -1) {
			if !strings.Contains(tag, " src=") {
				t.Errorf("%s holds an inline script %q", p, tag)
			}
		}
		for ext, re := range forbidden {
			if strings.HasSuffix(p, ext) {
				if m := re.FindString(text); m != "" {
					t.Errorf("%s holds %q", p, m)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("%d assets embedded", n)
	}
}

func TestHandler(t *testing.T) {
	h := New()
	if !h.Available() {
		t.Fatal("no assets")
	}
	for _, tc := range []struct {
		path   string
		status int
		ctype  string
	}{
		{"/", 200, "text/html; charset=utf-8"},
		{"/ui/app.js", 200, "text/javascript; charset=utf-8"},
		{"/ui/dom.js", 200, "text/javascript; charset=utf-8"},
		{"/ui/style.css", 200, "text/css; charset=utf-8"},
		{"/ui/", 404, "text/plain; charset=utf-8"},
		{"/ui/static/app.js", 404, "text/plain; charset=utf-8"},
		{"/app.js", 404, "text/plain; charset=utf-8"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != tc.ctype {
			t.Errorf("%s: %d %q, want %d %q", tc.path, rec.Code, rec.Header().Get("Content-Type"), tc.status, tc.ctype)
		}
		for k, v := range map[string]string{"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
			if rec.Header().Get(k) != v {
				t.Errorf("%s: %s %q, want %q", tc.path, k, rec.Header().Get(k), v)
			}
		}
	}
}

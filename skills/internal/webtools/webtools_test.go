package webtools

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/tomlconf"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

const page = `<!doctype html><html><head><title>Pump</title><style>body{color:red}</style>
<script>alert("x")</script></head><body><h1>Pump schedule</h1><p>The pump runs <b>at night</b>.</p>
<a href="/more">more</a></body></html>`

// fetchTool builds webfetch with c and a resolver seam mapping names to
// addresses (nil: the system resolver).
func fetchTool(t *testing.T, c Config, names map[string]string) skills.GoTool {
	t.Helper()
	if errs := c.Validate("builtin.web"); len(errs) > 0 {
		t.Fatal(errs)
	}
	lookup := net.DefaultResolver.LookupNetIP
	if names != nil {
		lookup = func(_ context.Context, _, host string) ([]netip.Addr, error) {
			if a, ok := names[host]; ok {
				return []netip.Addr{netip.MustParseAddr(a)}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		}
	}
	f, err := newFetcherWith(c, lookup)
	if err != nil {
		t.Fatal(err)
	}
	return f.tool()
}

func fetch(t *testing.T, tool skills.GoTool, u string) skills.Output {
	t.Helper()
	return tool.Run(context.Background(), map[string]any{"url": u})
}

// server starts an HTTP server on addr ("127.0.0.1:0") counting requests.
func server(t *testing.T, addr string, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	var hits atomic.Int64
	s := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	})}}
	s.Start()
	t.Cleanup(s.Close)
	return s, &hits
}

func TestWebfetchAllowed(t *testing.T) {
	srv, _ := server(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, page)
		case "/plain":
			fmt.Fprint(w, "just text\n")
		case "/img":
			w.Header().Set("Content-Type", "image/png")
			w.Write(pngBytes(t))
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2, 3, 0, 0})
		case "/moved":
			http.Redirect(w, r, "/page", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	})
	tool := fetchTool(t, Config{AllowNetworks: []string{"127.0.0.1/32"}}, nil)
	if p := tool.Tool.Permissions; len(p) != 1 || p[0] != skills.PermNetwork {
		t.Fatalf("permissions %v", p)
	}
	out := fetch(t, tool, srv.URL+"/moved")
	txt := out.Text()
	if out.ErrorType() != "" || !strings.Contains(txt, "# Pump schedule") || !strings.Contains(txt, "**at night**") ||
		!strings.Contains(txt, "("+srv.URL+"/more)") || strings.Contains(txt, "alert") || strings.Contains(txt, "color:red") ||
		!strings.Contains(txt, "URL: "+srv.URL+"/page") {
		t.Fatalf("page = %q %s", txt, out.ErrorText())
	}
	if out := tool.Run(context.Background(), map[string]any{"url": srv.URL + "/page", "format": "raw"}); !strings.Contains(out.Text(), "<h1>Pump schedule</h1>") {
		t.Errorf("raw = %q", out.Text())
	}
	if out := fetch(t, tool, srv.URL+"/plain"); !strings.HasSuffix(out.Text(), "just text\n") {
		t.Errorf("plain = %q", out.Text())
	}
	out = fetch(t, tool, srv.URL+"/img")
	if len(out.Content) != 2 || out.Content[1].Kind != skills.KindImage || out.Content[1].MIMEType != "image/png" || out.Content[1].Data != base64.StdEncoding.EncodeToString(pngBytes(t)) {
		t.Errorf("image = %+v", out)
	}
	if out := fetch(t, tool, srv.URL+"/bin"); out.ErrorType() != wire.ErrExecutionFailed {
		t.Errorf("binary = %+v", out)
	}
	if out := fetch(t, tool, srv.URL+"/missing"); out.ErrorType() != wire.ErrNotFound {
		t.Errorf("404 = %+v", out)
	}
}

// TestWebfetchDenied: loopback by default, a redirect to a denied
// address, a name resolving to loopback, hosts outside the allowlist and
// other schemes are all refused with permission_denied, and the denied
// server never sees a request.
func TestWebfetchDenied(t *testing.T) {
	secret, secretHits := server(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })
	front, _ := server(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	_, port, _ := net.SplitHostPort(secret.Listener.Addr().String())
	_, frontPort, _ := net.SplitHostPort(front.Listener.Addr().String())

	open := fetchTool(t, Config{}, map[string]string{"rebind.test": "127.0.0.2", "public.test": "93.184.215.14"})
	allowFront := fetchTool(t, Config{AllowNetworks: []string{"127.0.0.1/32"}}, map[string]string{"rebind.test": "127.0.0.2"})
	hosts := fetchTool(t, Config{AllowHosts: []string{"*.example.org"}, AllowNetworks: []string{"127.0.0.0/8"}}, map[string]string{"docs.example.org": "127.0.0.1"})
	for _, tc := range []struct {
		name string
		tool skills.GoTool
		url  string
	}{
		{"loopback by default", open, secret.URL},
		{"name resolving to loopback", open, "http://rebind.test:" + port + "/"},
		{"localhost, system resolver", fetchTool(t, Config{}, nil), "http://localhost:" + port + "/"},
		{"IPv4-mapped IPv6 loopback", open, "http://[::ffff:127.0.0.2]:" + port + "/"},
		{"IPv6 loopback with a zone", open, "http://[::1%25lo]:" + port + "/"},
		{"IPv6 link-local with a zone", open, "http://[fe80::1%25lo]:" + port + "/"},
		{"redirect to IPv6 loopback with a zone", allowFront, front.URL + "/?to=" + url.QueryEscape("http://[::1%25lo]:"+port+"/")},
		{"redirect to a denied address", allowFront, front.URL + "/?to=" + secret.URL},
		{"redirect to a name resolving to a denied address", allowFront, front.URL + "/?to=http://rebind.test:" + port + "/"},
		{"host outside the allowlist", hosts, "http://127.0.0.1:" + frontPort + "/?to=" + secret.URL},
		{"redirect to a host outside the allowlist", hosts, "http://docs.example.org:" + frontPort + "/?to=" + secret.URL},
		{"file scheme", open, "file:///etc/passwd"},
		{"credentials", allowFront, "http://user:pw@127.0.0.1:" + frontPort + "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := fetch(t, tc.tool, tc.url)
			if out.ErrorType() != wire.ErrPermissionDenied || strings.Contains(out.Text(), "secret") {
				t.Fatalf("fetch %s = %q %q (%s)", tc.url, out.Text(), out.ErrorText(), out.ErrorType())
			}
		})
	}
	if n := secretHits.Load(); n != 0 {
		t.Fatalf("the denied server was asked %d times", n)
	}
	// Allowed explicitly, the same server is reachable.
	allowed := fetchTool(t, Config{AllowNetworks: []string{"127.0.0.2/32"}}, nil)
	if out := fetch(t, allowed, secret.URL); out.ErrorType() != "" {
		t.Fatalf("allowed network = %+v", out)
	}
}

// TestPolicyControl checks the dial-time check on the addresses it sees.
func TestPolicyControl(t *testing.T) {
	p, _ := newPolicy(Config{AllowNetworks: []string{"192.168.1.0/24"}})
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": false, "10.1.2.3:443": false, "169.254.169.254:80": false, "[::1]:80": false, "[fe80::1]:80": false,
		"[fd00::1]:80": false, "100.64.0.1:80": false, "0.0.0.0:80": false, "[::ffff:10.0.0.1]:80": false, "[2002:7f00:1::]:80": false,
		"192.168.1.20:80": true, "192.168.2.20:80": false, "93.184.215.14:443": true, "[2606:2800:21f:cb07::1]:443": true,
		// A zone must not hide the address from the ranges.
		"[::1%lo]:80": false, "[::1%1]:80": false, "[fe80::1%eth0]:80": false, "[fd00::2%eth0]:80": false,
		"[fd00:ec2::254%eth0]:80": false, "[ff02::1%eth0]:80": false, "[2002:7f00:1::%eth0]:80": false,
		// Documentation ranges.
		"192.0.2.2:80": false, "198.51.100.7:80": false, "203.0.113.9:80": false, "[2001:db8::1]:80": false,
	} {
		if err := p.control("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("control(%s) = %v, want allowed %v", addr, err, ok)
		}
	}
}

func TestWebfetchLimits(t *testing.T) {
	srv, _ := server(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			w.Write(bytes.Repeat([]byte("0123456789"), 1000))
		case "/slow":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "start ")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	})
	tool := fetchTool(t, Config{AllowNetworks: []string{"127.0.0.1/32"}, MaxBytes: 1000, Timeout: tomlconf.Duration{Duration: 300 * time.Millisecond}}, nil)
	out := fetch(t, tool, srv.URL+"/big")
	if out.ErrorType() != "" || !out.Truncated || !strings.Contains(out.Text(), "[cut at") || strings.Count(out.Text(), "0123456789") != 100 {
		t.Fatalf("big = truncated %v %q", out.Truncated, out.Text())
	}
	start := time.Now()
	out = fetch(t, tool, srv.URL+"/slow")
	if out.ErrorType() != wire.ErrTimeout || time.Since(start) > 5*time.Second {
		t.Fatalf("slow = %+v after %v", out, time.Since(start))
	}
}

func TestWebsearch(t *testing.T) {
	t.Setenv("TEST_BRAVE_KEY", "k123")
	searx, _ := server(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") != "json" || r.URL.Query().Get("q") != "pump schedule" {
			http.Error(w, "bad query "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"query":"pump schedule","results":[{"title":"Pumps","url":"https://a.example/p","content":"When  pumps\nrun"},
			{"title":"Night","url":"https://b.example/n","content":""},{"title":"Third","url":"https://c.example","content":"x"}]}`)
	})
	brave, _ := server(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Subscription-Token") != "k123" || r.URL.Query().Get("count") != "2" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"type":"search","web":{"results":[{"title":"Brave hit","url":"https://d.example","description":"from brave"}]}}`)
	})
	for _, tc := range []struct {
		c    Config
		args map[string]any
		want string
	}{
		{Config{SearchURL: searx.URL + "/search"}, map[string]any{"query": "pump schedule", "count": 2.0},
			"1. Pumps\n   https://a.example/p\n   When pumps run\n2. Night\n   https://b.example/n"},
		{Config{SearchURL: brave.URL + "/res/v1/web/search", SearchFormat: FormatBrave, SearchKeyEnv: "TEST_BRAVE_KEY"}, map[string]any{"query": "q", "count": 2.0},
			"1. Brave hit\n   https://d.example\n   from brave"},
	} {
		tools, err := Tools(tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools) != 2 || tools[1].Tool.Name != "websearch" {
			t.Fatalf("tools %v", tools)
		}
		if out := tools[1].Run(context.Background(), tc.args); out.Text() != tc.want {
			t.Errorf("search %s = %q %s, want %q", tc.c.SearchFormat, out.Text(), out.ErrorText(), tc.want)
		}
	}
	if tools, _ := Tools(Config{}); len(tools) != 1 || tools[0].Tool.Name != "webfetch" {
		t.Fatalf("no search endpoint: %v", tools)
	}
	bad := Config{SearchURL: searx.URL + "/search", SearchFormat: FormatBrave}
	if errs := bad.Validate("builtin.web"); len(errs) == 0 {
		t.Fatal("brave without a key validated")
	}
}

// FuzzToMarkdown: any page converts without a panic to valid UTF-8.
func FuzzToMarkdown(f *testing.F) {
	f.Add(page)
	f.Add("<table><tr><td>a<td>b</table><ul><li>x<ol><li>y")
	f.Add("<a href='javascript:alert(1)'>x</a><img src=x onerror=y><pre><code>\x00</code></pre>")
	f.Fuzz(func(t *testing.T, s string) {
		md, _, err := toMarkdown(s, "http://example.org/dir/", DefaultMaxChars, DefaultMaxBytes)
		if err == nil && !utf8.ValidString(md) {
			t.Fatalf("invalid UTF-8 from %q", s)
		}
	})
}

func pngBytes(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

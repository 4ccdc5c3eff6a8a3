package webtools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// userAgent names the fetcher to the sites it asks.
const userAgent = "evoclaw-webfetch/1 (+https://github.com/evoclaw/evoclaw)"

// MaxURLBytes is the longest URL webfetch asks or follows a redirect to.
// Common servers refuse a longer request line anyway (Apache's
// LimitRequestLine is 8190 bytes, nginx's large_client_header_buffers 8
// KiB), and the URL is repeated in every result and error.
const MaxURLBytes = 8 << 10

// fetcher is the webfetch tool.
type fetcher struct {
	c      Config
	pol    policy
	client *http.Client
}

func newFetcher(c Config) (*fetcher, error) {
	return newFetcherWith(c, net.DefaultResolver.LookupNetIP)
}

// newFetcherWith is newFetcher with a resolver seam for tests.
func newFetcherWith(c Config, lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)) (*fetcher, error) {
	pol, err := newPolicy(c)
	if err != nil {
		return nil, err
	}
	f := &fetcher{c: c, pol: pol}
	tr := &http.Transport{
		Proxy: nil, // a proxy would dial past the address check
		DialContext: pol.dialer(func(ctx context.Context, host string) ([]netip.Addr, error) {
			return lookup(ctx, "ip", host)
		}, &net.Dialer{Timeout: c.Timeout.Duration}),
		TLSHandshakeTimeout:   c.Timeout.Duration,
		ResponseHeaderTimeout: c.Timeout.Duration,
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	f.client = &http.Client{
		Transport: tr,
		Timeout:   c.Timeout.Duration,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > DefaultMaxRedirects {
				return fmt.Errorf("stopped after %d redirects", DefaultMaxRedirects)
			}
			return f.checkURL(req.URL)
		},
	}
	return f, nil
}

// checkURL refuses a URL webfetch may not ask: longer than MaxURLBytes,
// not http(s), with credentials, or for a host outside the allowlist.
func (f *fetcher) checkURL(u *url.URL) error {
	if n := len(u.String()); n > MaxURLBytes {
		return fmt.Errorf("the URL is %d bytes, longer than %d", n, MaxURLBytes)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q: only http and https: %w", u.Scheme, ErrDenied)
	}
	if u.User != nil {
		return fmt.Errorf("URLs with credentials are not fetched: %w", ErrDenied)
	}
	if u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	return f.pol.checkHost(u.Hostname())
}

func (f *fetcher) tool() skills.GoTool {
	scope := ""
	if len(f.pol.hosts) > 0 {
		scope = " of the allowed hosts"
	}
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "webfetch",
			Description: fmt.Sprintf("Fetch a web page by URL (http or https) and return its content: HTML as Markdown, text as is, "+
				"PNG/JPEG/GIF/WebP as an image. At most %d KiB are read and %d characters returned; only public addresses%s.",
				f.c.MaxBytes>>10, f.c.MaxChars, scope),
			Parameters: skills.Parameters{Required: []string{"url"}, Properties: map[string]skills.Param{
				"url":    {Type: skills.TypeString, Description: "The URL to fetch"},
				"format": {Type: skills.TypeString, Description: "markdown (default) or raw: the body as received, for HTML"},
			}},
			Permissions: []string{skills.PermNetwork},
			Metadata:    map[string]string{"category": "web"},
		},
		Run: f.run,
	}
}

func (f *fetcher) run(ctx context.Context, args map[string]any) skills.Output {
	raw, _ := args["url"].(string)
	format, _ := args["format"].(string)
	if format != "" && format != "markdown" && format != "raw" {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("webfetch: format must be markdown or raw, got %q", format))
	}
	if len(raw) > MaxURLBytes {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("webfetch: the URL is %d bytes, longer than the %d allowed", len(raw), MaxURLBytes))
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("webfetch: %q is not an absolute URL", raw))
	}
	if err := f.checkURL(u); err != nil {
		return failure(ctx, raw, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("webfetch: %v", err))
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html, text/plain;q=0.9, text/markdown;q=0.9, application/json;q=0.8, image/*;q=0.5, */*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return failure(ctx, raw, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(f.c.MaxBytes)+1))
	if err != nil {
		return failure(ctx, raw, err)
	}
	cut := len(body) > f.c.MaxBytes
	if cut {
		body = body[:f.c.MaxBytes]
	}
	final := resp.Request.URL.String()
	if resp.StatusCode >= 400 {
		code := wire.ErrExecutionFailed
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
			code = wire.ErrNotFound
		}
		return skills.Failed(code, fmt.Sprintf("webfetch %s: HTTP %s: %s", final, resp.Status, snippet(body)))
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sniffed := http.DetectContentType(body)
	switch {
	case isImage(sniffed):
		if cut {
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("webfetch %s: %s image larger than %d bytes", final, sniffed, f.c.MaxBytes))
		}
		return skills.Output{Content: []skills.Block{
			skills.TextBlock(fmt.Sprintf("%s: %s image, %d bytes", final, sniffed, len(body))),
			skills.ImageBlock(sniffed, base64.StdEncoding.EncodeToString(body)),
		}}
	case !textual(ctype, sniffed):
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("webfetch %s: content type %q (%d bytes) is not text or an image; not shown", final, cmpOr(ctype, sniffed), len(body)))
	}
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	if (ctype == "text/html" || ctype == "application/xhtml+xml" || ctype == "" && strings.HasPrefix(sniffed, "text/html")) && format != "raw" {
		md, dropped, err := toMarkdown(text, final, f.c.MaxChars, f.c.MaxBytes)
		if err != nil {
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("webfetch %s: the HTML could not be converted: %v", final, err))
		}
		text, cut = md, cut || dropped
	}
	header := fmt.Sprintf("URL: %s\nContent-Type: %s\n\n", final, cmpOr(ctype, sniffed))
	if r := []rune(text); len(r) > f.c.MaxChars {
		text, cut = string(r[:f.c.MaxChars]), true
	}
	if cut {
		text += fmt.Sprintf("\n\n[cut at %d KiB of body or %d characters]", f.c.MaxBytes>>10, f.c.MaxChars)
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(header + text)}, Truncated: cut}
}

// failure maps a fetch error to an output with a stable code.
func failure(ctx context.Context, u string, err error) skills.Output {
	code := wire.ErrExecutionFailed
	var ne net.Error
	switch {
	case errors.Is(err, ErrDenied):
		code = wire.ErrPermissionDenied
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		code = wire.ErrTimeout
	case ctx.Err() != nil:
		code = wire.ErrInterrupted
	}
	return skills.Failed(code, fmt.Sprintf("webfetch %s: %v", u, err))
}

func isImage(t string) bool {
	switch t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// textual reports a content type shown as text.
func textual(ctype, sniffed string) bool {
	switch {
	case strings.HasPrefix(ctype, "text/"), ctype == "application/json", ctype == "application/xml",
		ctype == "application/xhtml+xml", strings.HasSuffix(ctype, "+json"), strings.HasSuffix(ctype, "+xml"):
		return true
	case ctype == "" || ctype == "application/octet-stream":
		return strings.HasPrefix(sniffed, "text/")
	}
	return false
}

// snippet is the start of an error body for a message.
func snippet(b []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b[:min(len(b), 200)]), ""))
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Package console is the node's web console: a few static files (HTML,
// CSS, ES modules, no framework, no build step) embedded in the binary and
// served at "/" by the HTTP API. The page holds no secret and no data: it
// asks the operator for the node's token and calls the /v1 API with it,
// so it can do nothing the API does not allow.
//
// Every answer carries a strict Content-Security-Policy (scripts, styles
// and connections from the node only; no inline code; no framing), plus
// nosniff and no-referrer. Build with the tag noconsole to leave the
// assets out (the API stays).
//
// # Concurrency
//
// The Handler is safe for concurrent use: it serves immutable bytes.
package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// CSP is the Content-Security-Policy of every console answer.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Prefix is the path under which the console's assets are served; the page
// itself is "/".
const Prefix = "/ui/"

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the console: "/" is the page, Prefix+NAME its assets.
// Anything else is 404. Assets need no token; they hold no data.
type Handler struct {
	assets map[string]asset // by path: "/" and Prefix+name
}

// New reads the embedded assets. Without them (built with noconsole) the
// handler answers 404 with a note saying so.
func New() *Handler {
	h := &Handler{assets: map[string]asset{}}
	_ = fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		name := strings.TrimPrefix(p, "static/")
		a := asset{body: b, ctype: contentType(name), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		h.assets[Prefix+name] = a
		if name == "index.html" {
			h.assets["/"] = a
		}
		return nil
	})
	return h
}

// Available reports whether the console's assets are built in.
func (h *Handler) Available() bool { return len(h.assets) > 0 }

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	}
	return "application/octet-stream"
}

// ServeHTTP answers GET and HEAD of the page and its assets.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	a, ok := h.assets[r.URL.Path]
	if !ok {
		hd.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		if !h.Available() {
			_, _ = w.Write([]byte("this evoclaw was built without its web console (build tag noconsole); the /v1 API is served\n"))
			return
		}
		_, _ = w.Write([]byte("not found\n"))
		return
	}
	hd.Set("Content-Type", a.ctype)
	// Revalidate every time: an upgraded binary serves new assets at once,
	// and an unchanged one answers 304.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

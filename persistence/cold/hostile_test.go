package cold

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// A hostile libSQL server for tests: it speaks Hrana over HTTP
// (POST /v2/pipeline) the way the client library does, on a real socket,
// and answers whatever its test makes it answer.

// hostileRequest is the part of a pipeline request the hostile server
// looks at.
type hostileRequest struct {
	Requests []struct {
		Type string `json:"type"`
		Stmt *struct {
			SQL string `json:"sql"`
		} `json:"stmt"`
		Batch *struct {
			Steps []json.RawMessage `json:"steps"`
		} `json:"batch"`
	} `json:"requests"`
	Body []byte `json:"-"` // the request as sent
}

// hostile is a running hostile server. Its answer function writes the
// whole HTTP answer to a request; seen records each request's
// Authorization header.
type hostile struct {
	URL string

	mu    sync.Mutex // guards auths
	auths []string
}

// startHostile serves answer on a random loopback port until the test ends.
func startHostile(t testing.TB, answer func(w http.ResponseWriter, r *http.Request, req hostileRequest)) *hostile {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{URL: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auths = append(h.auths, r.Header.Get("Authorization"))
		h.mu.Unlock()
		var req hostileRequest
		req.Body, _ = io.ReadAll(r.Body)
		_ = json.Unmarshal(req.Body, &req)
		answer(w, r, req)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return h
}

// requests returns the Authorization headers of the requests received.
func (h *hostile) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auths...)
}

// okAnswer acknowledges every request of req, storing nothing: an execute
// gets result (an empty one when ""), a batch an empty result per step.
func okAnswer(req hostileRequest, result string) string {
	if result == "" {
		result = `{"cols":[],"rows":[],"affected_row_count":0}`
	}
	var out []string
	for _, r := range req.Requests {
		switch r.Type {
		case "execute":
			out = append(out, `{"type":"ok","response":{"type":"execute","result":`+result+`}}`)
		case "batch":
			steps := make([]string, len(r.Batch.Steps))
			errs := make([]string, len(r.Batch.Steps))
			for i := range steps {
				steps[i], errs[i] = `{"cols":[],"rows":[],"affected_row_count":1}`, "null"
			}
			out = append(out, `{"type":"ok","response":{"type":"batch","result":{"step_results":[`+
				strings.Join(steps, ",")+`],"step_errors":[`+strings.Join(errs, ",")+`]}}}`)
		default:
			out = append(out, `{"type":"ok","response":{"type":"`+r.Type+`"}}`)
		}
	}
	return `{"baton":null,"results":[` + strings.Join(out, ",") + `]}`
}

// dropBatches returns a hostile proxy to the libSQL server at upstream
// that acknowledges, without forwarding, every batch holding drop.
func dropBatches(t testing.TB, upstream, drop string) *hostile {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	return startHostile(t, func(w http.ResponseWriter, r *http.Request, req hostileRequest) {
		if bytes.Contains(req.Body, []byte(drop)) {
			io.WriteString(w, okAnswer(req, ""))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(req.Body))
		r.ContentLength = int64(len(req.Body))
		proxy.ServeHTTP(w, r)
	})
}

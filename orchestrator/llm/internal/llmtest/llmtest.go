// Package llmtest serves recorded request/response pairs (testdata/llm/) on
// a loopback httptest server and asserts that the requests the providers
// send match the recorded ones. It also holds what the providers' tests
// share: the tools the recordings offer, the check of a typed failure, the
// Contract every HTTP provider passes when the server stalls or is gone, and
// the seeds and invariants of their parsers' fuzz targets.
//
// A pair file is JSON:
//
//	{"doc": "what it shows",
//	 "path": "/v1/chat/completions",          // expected URL path ("" skips)
//	 "headers": {"Authorization": "Bearer k"}, // expected; "" means absent
//	 "request": {...},                         // expected body, compared as JSON (null skips)
//	 "status": 200, "response_headers": {...},
//	 "response": {...}                         // JSON body, or
//	 "response_text": "...",                   // a raw body, or
//	 "stream": [{...}, "[DONE]"],              // SSE events: "data: <item>"; an object
//	                                           //  with a string "type" also gets "event: <type>"
//	 "stall": true}                            // then hang until the client leaves
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// Pair is one recorded exchange.
type Pair struct {
	Doc             string            `json:"doc"`
	Path            string            `json:"path"`
	Headers         map[string]string `json:"headers"`
	Request         json.RawMessage   `json:"request"`
	Status          int               `json:"status"`
	ResponseHeaders map[string]string `json:"response_headers"`
	Response        json.RawMessage   `json:"response"`
	ResponseText    string            `json:"response_text"`
	Stream          []json.RawMessage `json:"stream"`
	Stall           bool              `json:"stall"`
}

// Dir is the repository's testdata/llm, relative to the test's package
// directory at any depth under orchestrator/llm/ ("../../../testdata/llm"
// from orchestrator/llm/providers, one more "../" from
// orchestrator/llm/internal/openai).
var Dir = testdataDir()

// testdataDir finds testdata/llm in the nearest directory above the
// working directory (a test runs in its package's directory) that holds
// go.mod; "testdata/llm" when there is none, so that Load names the file
// it could not open.
func testdataDir() string {
	rel := "."
	for range 10 {
		if _, err := os.Stat(filepath.Join(rel, "go.mod")); err == nil {
			return filepath.Join(rel, "testdata", "llm")
		}
		rel = filepath.Join(rel, "..")
	}
	return filepath.Join("testdata", "llm")
}

// Load reads a pair file relative to Dir.
func Load(t testing.TB, name string) Pair {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var p Pair
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("pair %s: %v", name, err)
	}
	return p
}

// Server serves pairs in order, one per request, asserting each request.
// A request beyond the last pair fails the test.
type Server struct {
	*httptest.Server
	t     testing.TB
	mu    sync.Mutex // guards pairs, n and bodies
	pairs []Pair
	n     int
	// bodies holds the request bodies received, in order.
	bodies [][]byte
}

// Serve starts a server for pairs; it is closed at the end of the test.
func Serve(t testing.TB, pairs ...Pair) *Server {
	s := &Server{t: t, pairs: pairs}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Requests reports how many requests arrived.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Body returns the i-th request body.
func (s *Server) Body(i int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	i := s.n
	s.n++
	s.bodies = append(s.bodies, body)
	var p Pair
	ok := i < len(s.pairs)
	if ok {
		p = s.pairs[i]
	}
	s.mu.Unlock()
	if !ok {
		s.t.Errorf("request %d: no recorded pair left (have %d)", i+1, len(s.pairs))
		http.Error(w, "no pair", http.StatusInternalServerError)
		return
	}
	if p.Path != "" && r.URL.Path != p.Path {
		s.t.Errorf("request %d: path %q, want %q", i+1, r.URL.Path, p.Path)
	}
	for k, want := range p.Headers {
		if got := r.Header.Get(k); got != want {
			s.t.Errorf("request %d: header %s = %q, want %q", i+1, k, got, want)
		}
	}
	if len(p.Request) > 0 && string(p.Request) != "null" {
		if diff := JSONDiff(p.Request, body); diff != "" {
			s.t.Errorf("request %d body differs from the recording: %s\ngot:  %s", i+1, diff, body)
		}
	}
	for k, v := range p.ResponseHeaders {
		w.Header().Set(k, v)
	}
	status := p.Status
	if status == 0 {
		status = http.StatusOK
	}
	switch {
	case p.Stream != nil:
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		w.WriteHeader(status)
		for _, item := range p.Stream {
			var str string
			if json.Unmarshal(item, &str) == nil {
				fmt.Fprintf(w, "data: %s\n\n", str)
			} else {
				var typed struct {
					Type string `json:"type"`
				}
				if json.Unmarshal(item, &typed) == nil && typed.Type != "" {
					fmt.Fprintf(w, "event: %s\n", typed.Type)
				}
				var c bytes.Buffer
				if err := json.Compact(&c, item); err != nil {
					s.t.Errorf("pair stream item: %v", err)
				}
				fmt.Fprintf(w, "data: %s\n\n", c.Bytes())
			}
			w.(http.Flusher).Flush()
		}
	case p.ResponseText != "":
		w.WriteHeader(status)
		io.WriteString(w, p.ResponseText)
	default:
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		w.Write(p.Response)
	}
	if p.Stall {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// JSONDiff compares two JSON documents by value and describes the first
// difference, "" when equal.
func JSONDiff(want, got []byte) string {
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return "recorded body is not JSON: " + err.Error()
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return "body is not JSON: " + err.Error()
	}
	return diff("$", w, g)
}

func diff(path string, w, g any) string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %T", path, g)
		}
		for k := range wv {
			if _, ok := gv[k]; !ok {
				return fmt.Sprintf("%s.%s: missing", path, k)
			}
			if d := diff(path+"."+k, wv[k], gv[k]); d != "" {
				return d
			}
		}
		for k := range gv {
			if _, ok := wv[k]; !ok {
				return fmt.Sprintf("%s.%s: unexpected (value %v)", path, k, gv[k])
			}
		}
		return ""
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return fmt.Sprintf("%s: want an array, got %T", path, g)
		}
		if len(wv) != len(gv) {
			return fmt.Sprintf("%s: %d items, want %d", path, len(gv), len(wv))
		}
		for i := range wv {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(w, g) {
		return fmt.Sprintf("%s: got %s, want %s", path, show(g), show(w))
	}
	return ""
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}

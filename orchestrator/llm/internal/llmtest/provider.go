package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// Tools returns the tools the recorded requests offer, in their order.
func Tools() []llm.ToolDef {
	return []llm.ToolDef{
		{Name: "pi-1__read_file", Description: "Read a file", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}}},
		{Name: "pi-1__sysinfo", Description: "Report CPU temperature and load", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"verbose": map[string]any{"type": "boolean"}}}},
	}
}

// ServeFiles serves the pair files names of the folder dir under Dir, in
// order; see Serve.
func ServeFiles(t testing.TB, dir string, names ...string) *Server {
	t.Helper()
	pairs := make([]Pair, len(names))
	for i, name := range names {
		pairs[i] = Load(t, path.Join(dir, name))
	}
	return Serve(t, pairs...)
}

// WantError fails t unless err is an *llm.Error of provider with kind and
// status whose text contains msg, and returns it for further checks.
func WantError(t testing.TB, err error, provider string, kind llm.ErrorKind, status int, msg string) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *llm.Error", err)
	}
	if e.Kind != kind || e.Status != status || !strings.Contains(err.Error(), msg) || e.Provider != provider {
		t.Fatalf("err = %#v (%v), want %s kind %s status %d containing %q", e, err, provider, kind, status, msg)
	}
	return e
}

// Failure is a recorded pair that fails, and the error a provider must
// return for it (see WantError).
type Failure struct {
	Pair   string
	Kind   llm.ErrorKind
	Status int
	Msg    string
}

// WantFailures checks each failure in a subtest named for its pair:
// complete makes a provider talking to a server of that one pair (asking
// for a stream when the pair's name starts with "stream") and returns the
// error of one call, which must be the typed error the failure names;
// check, when not nil, checks each error further.
func WantFailures(t *testing.T, provider string, failures []Failure, complete func(t *testing.T, pair string, stream bool) error,
	check func(t *testing.T, e *llm.Error)) {
	for _, f := range failures {
		t.Run(f.Pair, func(t *testing.T) {
			e := WantError(t, complete(t, f.Pair, strings.HasPrefix(f.Pair, "stream")), provider, f.Kind, f.Status, f.Msg)
			if check != nil {
				check(t, e)
			}
		})
	}
}

// Seeds adds to f every recorded answer of the folder dir under Dir: the
// JSON bodies, or with stream the event streams as "data:" lines.
func Seeds(f *testing.F, dir string, stream bool) {
	files, err := filepath.Glob(filepath.Join(Dir, dir, "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recorded pairs in %s: %v", dir, err)
	}
	for _, file := range files {
		p := Load(f, path.Join(dir, filepath.Base(file)))
		if stream && p.Stream != nil {
			var b bytes.Buffer
			for _, item := range p.Stream {
				var s string
				if json.Unmarshal(item, &s) != nil {
					s = string(item)
				}
				b.WriteString("data: " + s + "\n\n")
			}
			f.Add(b.Bytes())
		}
		if !stream && len(p.Response) > 0 {
			f.Add([]byte(p.Response))
		}
	}
}

// CheckAnswer fails t unless what a provider's parser returned holds for any
// input: a typed error, or an answer with text or calls, every call with an
// id, a name and JSON arguments, that marshals.
func CheckAnswer(t *testing.T, r llm.Response, err error) {
	t.Helper()
	if err != nil {
		if k := llm.KindOf(err); k == llm.KindInternal || k == "" {
			t.Fatalf("untyped error: %v", err)
		}
		return
	}
	if r.Message.Content == "" && len(r.Message.ToolCalls) == 0 {
		t.Fatal("accepted an empty answer")
	}
	for _, c := range r.Message.ToolCalls {
		if c.ID == "" || c.Name == "" || !json.Valid(c.Arguments) {
			t.Fatalf("bad call %+v", c)
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("response does not marshal: %v", err)
	}
}

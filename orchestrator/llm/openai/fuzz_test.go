package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// seeds adds every recorded body and stream of testdata/llm/openai.
func seeds(f *testing.F, stream bool) {
	files, _ := filepath.Glob(filepath.Join(llmtest.Dir, "openai", "*.json"))
	for _, path := range files {
		p := llmtest.Load(f, "openai/"+filepath.Base(path))
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
	if _, err := os.Stat(llmtest.Dir); err != nil {
		f.Fatal(err)
	}
}

// checkResponse holds for every answer a parser accepts.
func checkResponse(t *testing.T, r llm.Response, err error) {
	if err != nil {
		if llm.KindOf(err) == llm.KindInternal || llm.KindOf(err) == "" {
			t.Fatalf("untyped error: %v", err)
		}
		return
	}
	if r.Message.Content == "" && len(r.Message.ToolCalls) == 0 {
		t.Fatal("accepted an empty answer")
	}
	ids := map[string]bool{}
	for _, c := range r.Message.ToolCalls {
		if c.ID == "" || c.Name == "" || ids[c.ID] {
			t.Fatalf("bad call %+v", c)
		}
		ids[c.ID] = true
		if !json.Valid(c.Arguments) {
			t.Fatalf("arguments not JSON: %q", c.Arguments)
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("response does not marshal: %v", err)
	}
}

func FuzzParseResponse(f *testing.F) {
	seeds(f, false)
	call := &httpc.Call{Provider: Name, Model: "m"}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseResponse(call, b)
		checkResponse(t, r, err)
	})
}

func FuzzReadStream(f *testing.F) {
	seeds(f, true)
	call := &httpc.Call{Provider: Name, Model: "m"}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := readStream(context.Background(), call, bytes.NewReader(b))
		checkResponse(t, r, err)
	})
}

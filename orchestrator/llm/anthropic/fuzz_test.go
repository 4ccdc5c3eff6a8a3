package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/httpc"
	"github.com/evoclaw/evoclaw/orchestrator/llm/internal/llmtest"
)

// seeds adds every recorded body or stream of testdata/llm/anthropic.
func seeds(f *testing.F, stream bool) {
	files, err := filepath.Glob(filepath.Join(llmtest.Dir, "anthropic", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recorded pairs: %v", err)
	}
	for _, path := range files {
		p := llmtest.Load(f, "anthropic/"+filepath.Base(path))
		if stream && p.Stream != nil {
			var b bytes.Buffer
			for _, item := range p.Stream {
				b.WriteString("data: " + string(item) + "\n\n")
			}
			f.Add(b.Bytes())
		}
		if !stream && len(p.Response) > 0 {
			f.Add([]byte(p.Response))
		}
	}
}

func check(t *testing.T, r llm.Response, err error) {
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

func FuzzParseResponse(f *testing.F) {
	seeds(f, false)
	call := &httpc.Call{Provider: Name, Model: "m"}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseResponse(call, b)
		check(t, r, err)
	})
}

func FuzzReadStream(f *testing.F) {
	seeds(f, true)
	call := &httpc.Call{Provider: Name, Model: "m"}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := readStream(context.Background(), call, bytes.NewReader(b))
		check(t, r, err)
	})
}

package orchestrator

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeChatCompletionRequest(t *testing.T) {
	in, err := decodeChatCompletionRequest([]byte(`{"model":"evoclaw","max_tokens":10,"max_completion_tokens":20,
	  "stream":true,"stream_options":{"include_usage":true},"conversation_id":"c1","temperature":0,"seed":-7,"presence_penalty":2,
	  "messages":[{"role":"system","content":[{"type":"text","text":"s1"},{"type":"text","text":"s2"}]},
	              {"role":"user","content":"u1","name":"ann"},{"role":"assistant","content":null,"tool_calls":[]},
	              {"role":"user","content":[{"type":"text","text":"last"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.MaxTokens != 20 || !in.Stream || !in.IncludeUsage || in.ConversationID != "c1" || in.System != "s1\ns2" || in.Text != "last" ||
		roles(in.Seed) != "user:u1|assistant:|" {
		t.Fatalf("decoded %+v", in)
	}
	if s, _ := json.Marshal(in.Sampling); string(s) != `{"temperature":0,"presence_penalty":2,"seed":-7}` {
		t.Fatalf("sampling %s", s)
	}
}

// FuzzDecodeChatCompletionRequest: any body is decoded or refused with a
// 400 or 404 that names a problem; a decoded one is usable.
func FuzzDecodeChatCompletionRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"evoclaw","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"evoclaw","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"}]}],"stream":true}`,
		`{"model":"evoclaw","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"model":"evoclaw","messages":[{"role":"assistant","tool_calls":[{}]},{"role":"user","content":"x"}],"tools":null}`,
		`{"model":"evoclaw","messages":[{"role":"user","content":"x"}],"stop":["a","",1]}`, `{"model":"evoclaw","messages":[{"role":"user","content":"x"}],"stop":"\n"}`,
		`{"model":"evoclaw","messages":[{"role":"user","content":"one. two, three"}],"stop":[",","."]}`,
		`{"model":"evoclaw","messages":[{"role":"user","content":"x"}],"temperature":2.5,"top_p":-1,"seed":1e3,"metadata":{"k":1},"logit_bias":{"1":5}}`,
		`{"model":"evoclaw","messages":[{"role":"assistant","function_call":{"name":"f"}},{"role":"user","content":"x"}],"functions":[{"name":"f"}]}`,
		`{"model":"evoclaw","messages":[{"role":"assistant","refusal":"no","content":[{"type":"refusal","refusal":"no"}]},{"role":"user","content":[{"type":"refusal"}]}]}`,
		`{"model":"evoclaw","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":5},"b",[]]}]}`,
		`{"model":"gpt","messages":[]}`, `{"model":"evoclaw","n":2,"max_tokens":-1}`, `[1,2]`, `{"model":`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := decodeChatCompletionRequest(body)
		if err != nil {
			if (err.Status != 400 && err.Status != 404) || err.Message == "" || err.Type == "" {
				t.Fatalf("refusal %+v", err)
			}
			return
		}
		if in.Model != ModelEvoclaw || strings.TrimSpace(in.Text) == "" || in.MaxTokens < 0 {
			t.Fatalf("accepted %+v", in)
		}
		for _, m := range in.Seed {
			if m.Role != "user" && m.Role != "assistant" {
				t.Fatalf("seed role %q", m.Role)
			}
		}
		if checkSampling(in.Sampling) != nil {
			t.Fatalf("accepted sampling hints out of range: %+v", in.Sampling)
		}
		if len(in.Stop) > maxStopSequences || slices.Contains(in.Stop, "") {
			t.Fatalf("stop sequences %q", in.Stop)
		}
		// Cut by its own stop sequences, the request's text keeps a
		// prefix that holds none of them.
		cut, found := cutAtStop(in.Text, in.Stop)
		if !strings.HasPrefix(in.Text, cut) || found != containsAny(in.Text, in.Stop) || containsAny(cut, in.Stop) {
			t.Fatalf("text %q cut by %q: %q (found %v)", in.Text, in.Stop, cut, found)
		}
		if utf8.ValidString(string(body)) && !utf8.ValidString(in.Text) {
			t.Fatalf("valid UTF-8 body gave invalid text %q", in.Text)
		}
	})
}

// FuzzDecodeChatRequest: POST /v1/chat bodies are decoded or refused,
// never accepted without text.
func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range []string{`{"text":"hi"}`, `{"conversation_id":"c","text":"x","stream":true}`, `{"text":""}`, `{"text":1}`, `{} {}`, ``,
		`{"text":"x","temperature":0,"top_p":1,"seed":7}`, `{"text":"x","frequency_penalty":-2.5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeChatRequest(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if strings.TrimSpace(req.Text) == "" || checkSampling(req.Sampling) != nil {
			t.Fatalf("accepted %+v", req)
		}
	})
}

func containsAny(s string, subs []string) bool {
	return slices.ContainsFunc(subs, func(q string) bool { return strings.Contains(s, q) })
}

// TestDecodeChatCompletionLongArrays: a 4 MiB body whose messages, stop
// or content parts hold far more elements than their bounds is refused
// naming the field, without decoding them: what it allocates stays within
// a few times its size (decoded first, each took 60 to 70 MB).
func TestDecodeChatCompletionLongArrays(t *testing.T) {
	fill := func(head, elem, tail string) []byte {
		n := (maxCompletionBody - len(head) - len(tail)) / (len(elem) + 1)
		return []byte(head + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + tail)
	}
	for _, tt := range []struct {
		name, param string
		body        []byte
	}{
		{"messages", "messages", fill(`{"model":"evoclaw","messages":[`, `{"role":"user","content":"a"}`, `]}`)},
		{"stop", "stop", fill(`{"model":"evoclaw","messages":[{"role":"user","content":"a"}],"stop":[`, `"a"`, `]}`)},
		{"content parts", "messages[0].content", fill(`{"model":"evoclaw","messages":[{"role":"user","content":[`, `{"type":"text","text":""}`, `]}]}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := decodeChatCompletionRequest(tt.body)
			runtime.ReadMemStats(&after)
			if err == nil || err.Status != 400 || err.Param == nil || *err.Param != tt.param || !strings.Contains(err.Message, "more than") {
				t.Fatalf("refusal %+v, want 400 naming %s", err, tt.param)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*uint64(len(tt.body)) {
				t.Fatalf("refusing a %d-byte body allocated %d bytes", len(tt.body), alloc)
			}
		})
	}
}

// FuzzMoreThan: for any JSON array, moreThan agrees with the length the
// decoder finds, at every bound around it.
func FuzzMoreThan(f *testing.F) {
	for _, s := range []string{`[]`, `[1]`, ` [ 1 , "a,]" , {"x":[1,2]} , [[]] , true ] `, `["\"],"]`, `[null,-1.5e3,"\\"]`, `{"a":1}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var elems []json.RawMessage
		if !json.Valid(raw) {
			return
		}
		n := -1 // not an array: never more than any bound
		if json.Unmarshal(raw, &elems) == nil {
			n = len(elems)
		}
		for _, max := range []int{0, 1, 2, 3, n - 1, n, n + 1} {
			if max < 0 {
				continue
			}
			if got, want := moreThan(raw, max), n > max; got != want {
				t.Fatalf("moreThan(%s, %d) = %v, want %v (%d elements)", raw, max, got, want, n)
			}
		}
	})
}

package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence"
)

// TestMessagePreviewsShowWhatTheBodiesDo reads each body both ways: whole
// and decoded (messageView, what the endpoint did for every message), and
// as SQLite previews it for a large body (previewView). The views must be
// the same, except that a preview that cut something says the size of
// the body.
func TestMessagePreviewsShowWhatTheBodiesDo(t *testing.T) {
	node, _, _ := startAPI(t, nil, Options{})
	long := func(s string, n int) string { return strings.Repeat(s, n/len(s)+1) }
	args := func(s string) json.RawMessage { return json.RawMessage(s) }
	msg := func(m llm.Message) string {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		name, role, body string
		want             func(v MessageView) bool // of the preview's view, beside being messageView's
	}{
		{"short string", "user", msg(llm.Message{Role: "user", Content: "is the pump running?"}), nil},
		{"escapes", "user", msg(llm.Message{Role: "user", Content: "a \"quote\"\n<b>&</b>\u2028\x00\\"}), nil},
		{"long ascii", "user", msg(llm.Message{Role: "user", Content: long("abc", 1<<20)}), func(v MessageView) bool {
			return v.Cut && len(v.Content) == MaxMessageText
		}},
		{"exactly the bound", "user", msg(llm.Message{Role: "user", Content: long("x", MaxMessageText)[:MaxMessageText]}), func(v MessageView) bool {
			return !v.Cut && len(v.Content) == MaxMessageText
		}},
		{"one byte over", "user", msg(llm.Message{Role: "user", Content: long("x", MaxMessageText)[:MaxMessageText+1]}), func(v MessageView) bool {
			return v.Cut && len(v.Content) == MaxMessageText
		}},
		// 16384 is not a multiple of 3 nor of 4 (after one byte): the cut
		// falls inside a rune and must step back to its start.
		{"three-byte runes", "user", msg(llm.Message{Role: "user", Content: long("€", 1<<20)}), func(v MessageView) bool {
			return v.Cut && len(v.Content) == MaxMessageText-MaxMessageText%3 && utf8.ValidString(v.Content)
		}},
		{"four-byte runes", "user", msg(llm.Message{Role: "user", Content: "a" + long("😀", 1<<20)}), func(v MessageView) bool {
			return v.Cut && len(v.Content) == MaxMessageText-3 && utf8.ValidString(v.Content)
		}},
		{"parts with a large image", "tool", msg(llm.Message{Role: "tool", Name: "cam__snap", ToolCallID: "c1",
			Content: "a photo: [image/png]", Parts: []llm.Part{llm.TextPart("a photo:"), llm.ImagePart("image/png", long("QUFB", 3<<20))}}),
			func(v MessageView) bool {
				return !v.Cut && v.Content == "a photo: [image/png]" && v.Name == "cam__snap"
			}},
		{"tool calls", "assistant", msg(llm.Message{Role: "assistant", Content: long("thinking ", 40000), ToolCalls: []llm.ToolCall{
			{ID: "1", Name: "pi-1__pump_status", Arguments: args(`{}`)},
			{ID: "2", Name: "fs__write", Arguments: args(`{"path":"/a<b>","n":1.0e5,"z":[true,null,-0.5],"t":"` + long("é", 30000) + `"}`)},
			{ID: "3", Name: "x", Arguments: args(`"{\"path\": <not json"`), ArgumentsError: "invalid"},
			{ID: "4", Name: "née", Arguments: args(`null`)},
			{ID: "5", Name: "none"},
		}}), func(v MessageView) bool {
			return v.Cut && len(v.ToolCalls) == 5 && v.ToolCalls[0].Arguments == "{}" && len(v.ToolCalls[1].Arguments) <= MaxMessageText &&
				strings.Contains(v.ToolCalls[2].Arguments, `\u003c`)
		}},
		{"tool error", "tool", msg(llm.Message{Role: "tool", Name: "fs__read", ToolCallID: "7", IsError: true, Content: long("no such file ", 20000)}),
			func(v MessageView) bool { return v.Cut && v.IsError && v.Name == "fs__read" }},
		{"null members", "assistant", `{"role":null,"content":null,"tool_calls":null,"parts":null,"is_error":null,"name":null,"pad":"` + long("p", 20000) + `"}`,
			func(v MessageView) bool { return v.Content == "" && !v.Cut }},
		{"null call", "assistant", `{"content":"x","tool_calls":[null,{"name":"a","arguments":{}}],"pad":"` + long("p", 20000) + `"}`,
			func(v MessageView) bool { return len(v.ToolCalls) == 2 && v.ToolCalls[1].Arguments == "{}" }},
		{"duplicate member", "user", `{"content":"first","content":"second","pad":"` + long("p", 20000) + `"}`,
			func(v MessageView) bool { return v.Content == "second" }},
		{"unknown members", "user", `{"content":"hi","extra":{"deep":[1,2,3]},"pad":"` + long("p", 20000) + `"}`,
			func(v MessageView) bool { return v.Content == "hi" }},
		// Bodies that do not decode as a message are shown as their text.
		{"content a number", "user", `{"content":5,"pad":"` + long("p", 20000) + `"}`,
			func(v MessageView) bool { return v.Cut && strings.HasPrefix(v.Content, `{"content":5`) }},
		{"an array", "user", `["` + long("a", 20000) + `"]`, func(v MessageView) bool { return v.Cut && strings.HasPrefix(v.Content, `["aaa`) }},
		{"a string", "user", `"` + long("a", 20000) + `"`, func(v MessageView) bool { return v.Cut && strings.HasPrefix(v.Content, `"aaa`) }},
		{"call a string", "assistant", `{"content":"x","tool_calls":["` + long("a", 20000) + `"]}`, func(v MessageView) bool { return v.Cut }},
		{"call name a number", "assistant", `{"content":"x","tool_calls":[{"name":5,"arguments":"` + long("a", 20000) + `"}]}`,
			func(v MessageView) bool { return v.Cut && strings.HasPrefix(v.Content, "{") }},
		{"part a number", "tool", `{"content":"x","parts":[5],"pad":"` + long("p", 20000) + `"}`, func(v MessageView) bool { return v.Cut }},
		{"part text a number", "tool", `{"content":"x","parts":[{"type":"text","text":5}],"pad":"` + long("p", 20000) + `"}`,
			func(v MessageView) bool { return v.Cut }},
		{"is_error a string", "tool", `{"content":"x","is_error":"yes","pad":"` + long("p", 20000) + `"}`, func(v MessageView) bool { return v.Cut }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conv := fmt.Sprintf("preview-%d", i)
			if err := node.store.AppendMessages(context.Background(), conv, []persistence.Message{{Role: tc.role, Body: []byte(tc.body)}}); err != nil {
				t.Fatal(err)
			}
			whole, err := node.store.RecentMessages(context.Background(), conv, 1)
			if err != nil || len(whole) != 1 {
				t.Fatalf("RecentMessages: %v, %d messages", err, len(whole))
			}
			want := messageView(whole[0].Seq, whole[0].Time, whole[0].Role, whole[0].Body)
			if want.Cut {
				want.Size = int64(len(tc.body))
			}
			// whole 0: every body is previewed, however small.
			ps, err := node.store.RecentPreviews(context.Background(), conv, 1, 0, MaxMessageText+1)
			if err != nil || len(ps) != 1 {
				t.Fatalf("RecentPreviews: %v, %d messages", err, len(ps))
			}
			if ps[0].Body != nil || ps[0].Size != int64(len(tc.body)) {
				t.Fatalf("preview of %d bytes (size %d) with a body", len(tc.body), ps[0].Size)
			}
			got := previewView(ps[0])
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("preview view\n%.300v\nwant messageView's\n%.300v", fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want))
			}
			if tc.want != nil && !tc.want(got) {
				t.Fatalf("view %.400s", fmt.Sprintf("%+v", got))
			}
			// The endpoint: the same view, whether it read the body whole
			// (at most MaxMessageText) or not.
			l, _ := getMessages(t, node, conv, "")
			if len(l.Messages) != 1 || !reflect.DeepEqual(jsonRound(t, l.Messages[0]), jsonRound(t, want)) {
				t.Fatalf("endpoint answered %.300s", fmt.Sprintf("%+v", l.Messages))
			}
		})
	}
}

// jsonRound is v after a round trip through its JSON, as the endpoint
// sends it.
func jsonRound(t *testing.T, v MessageView) MessageView {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out MessageView
	decodeJSON(t, b, &out)
	return out
}

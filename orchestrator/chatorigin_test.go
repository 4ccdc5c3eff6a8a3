package orchestrator

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestChatReceivedIsAudited: a chat an API client sends is recorded, before
// its first message, as a chat_received event with the endpoint, the
// client's address, its User-Agent and X-Forwarded-For (cut, made valid
// UTF-8), so that an auditor can say who started a conversation's turns
// and from where; before, the trail held only the messages. A chat the
// node starts itself (a sub-agent here) records none.
func TestChatReceivedIsAudited(t *testing.T) {
	play := playbook{
		"hello": {say("hi")},
		"boss":  {toolTurn("a", ToolSessionsSpawn, `{"task":"leaf"}`), say("boss: {{last}}")},
		"leaf":  {say("leaf done")},
	}
	node, api, token := startAPI(t, nil, Options{Provider: play.provider()})
	long := "\xff" + strings.Repeat("é", 300)
	for _, tt := range []struct {
		path, body string
	}{
		{"/v1/chat", `{"conversation_id":"native","text":"hello"}`},
		{"/v1/chat/completions", `{"model":"evoclaw","messages":[{"role":"user","content":"hello"}]}`},
		{"/v1/chat", `{"conversation_id":"parent","text":"boss"}`},
	} {
		resp := send(t, http.MethodPost, api+tt.path, token, tt.body, "User-Agent", "probe/1.0 "+long, "X-Forwarded-For", "203.0.113.7")
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", tt.path, resp.StatusCode)
		}
	}
	res := queryAudit(t, node, `SELECT json_extract(detail, '$.conversation_id'), json_extract(detail, '$.endpoint'),
		json_extract(detail, '$.address'), json_extract(detail, '$.user_agent'), json_extract(detail, '$.forwarded_for'),
		json_extract(detail, '$.node'),
		chain_seq < (SELECT min(m.chain_seq) FROM messages m WHERE m.conversation_id = json_extract(e.detail, '$.conversation_id'))
		FROM events e WHERE kind = 'chat_received' ORDER BY chain_seq`)
	if len(res.Rows) != 3 {
		t.Fatalf("chat_received events %v, want one for each of the 3 chats sent (none for the sub-agent)", res.Rows)
	}
	want := []struct{ conv, path string }{{"native", "/v1/chat"}, {"oai-", "/v1/chat/completions"}, {"parent", "/v1/chat"}}
	for i, row := range res.Rows {
		conv, path, addr, ua, fwd, from, before := fmt.Sprint(row[0]), row[1], fmt.Sprint(row[2]), fmt.Sprint(row[3]), row[4], row[5], fmt.Sprint(row[6])
		if !strings.HasPrefix(conv, want[i].conv) || path != want[i].path || !strings.HasPrefix(addr, "127.0.0.1:") || fwd != "203.0.113.7" ||
			from != node.cfg.NodeID || before != "1" {
			t.Errorf("event %d: %v", i, row)
		}
		if !strings.HasPrefix(ua, "probe/1.0 \ufffdé") || len(ua) > maxClientField || len(ua) < maxClientField-1 {
			t.Errorf("event %d: user agent of %d bytes %q: want it cut to %d bytes, valid UTF-8", i, len(ua), ua[:min(len(ua), 20)], maxClientField)
		}
	}
}

// TestChatReceivedForwardedForKeepsProxies: forwarded_for holds every
// X-Forwarded-For line, and of a long list its end, which the proxies in
// front of the node wrote. Before, the first line alone was kept (a
// client's made-up address, without the line HAProxy adds), and a long
// list was cut at its end (the address nginx appended was lost).
func TestChatReceivedForwardedForKeepsProxies(t *testing.T) {
	node, api, token := startAPI(t, nil, Options{Provider: playbook{"hello": {say("hi")}}.provider()})
	junk := strings.Repeat("B", 300)
	for _, tt := range []struct {
		conv  string
		lines []string
		want  func(string) bool
	}{
		{"two-lines", []string{"198.51.100.1", "203.0.113.9"}, func(f string) bool { return f == "198.51.100.1, 203.0.113.9" }},
		{"long-list", []string{junk + ", 203.0.113.7"}, func(f string) bool {
			return strings.HasPrefix(f, cutMark+"BBB") && strings.HasSuffix(f, "B, 203.0.113.7") && len(f) == maxClientField
		}},
		{"long-lines", []string{junk, "203.0.113.8"}, func(f string) bool {
			return strings.HasPrefix(f, cutMark) && strings.HasSuffix(f, "B, 203.0.113.8") && len(f) <= maxClientField
		}},
	} {
		req, err := http.NewRequest(http.MethodPost, api+"/v1/chat", strings.NewReader(`{"conversation_id":"`+tt.conv+`","text":"hello"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		for _, l := range tt.lines {
			req.Header.Add("X-Forwarded-For", l)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", tt.conv, resp.StatusCode)
		}
		res := queryAudit(t, node, `SELECT json_extract(detail, '$.forwarded_for') FROM events
			WHERE kind = 'chat_received' AND json_extract(detail, '$.conversation_id') = '`+tt.conv+`'`)
		if len(res.Rows) != 1 || !tt.want(fmt.Sprint(res.Rows[0][0])) {
			t.Errorf("%s: X-Forwarded-For lines %q recorded as %v", tt.conv, tt.lines, res.Rows)
		}
	}
}

// FuzzForwardedField: a forwarded_for, as recorded, is one line of valid
// UTF-8 of at most maxClientField bytes; a plain list is kept whole, or its
// end after cutMark.
func FuzzForwardedField(f *testing.F) {
	for _, s := range []string{"", "203.0.113.7", "\xff, 10.0.0.1", strings.Repeat("é", 200) + ", 10.0.0.1", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := forwardedField(s)
		plain := utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
		if !utf8.ValidString(got) || len(got) > maxClientField || strings.ContainsFunc(got, unicode.IsControl) ||
			plain && len(s) <= maxClientField && got != s ||
			plain && len(s) > maxClientField && (!strings.HasPrefix(got, cutMark) || !strings.HasSuffix(s, got[len(cutMark):]) || len(got) < maxClientField-3) {
			t.Fatalf("forwardedField(%q) = %q", s, got)
		}
	})
}

// FuzzClientField: a request's header value, as recorded, is one line of
// valid UTF-8 of at most maxClientField bytes; a plain value is kept, or
// only cut to fit.
func FuzzClientField(f *testing.F) {
	for _, s := range []string{"", "curl/8.5", "\xff\xfe", strings.Repeat("é", 200), strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := clientField(s)
		plain := utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
		if !utf8.ValidString(got) || len(got) > maxClientField || strings.ContainsFunc(got, unicode.IsControl) ||
			plain && !strings.HasPrefix(s, got) || plain && len(s) <= maxClientField && got != s {
			t.Fatalf("clientField(%q) = %q", s, got)
		}
	})
}

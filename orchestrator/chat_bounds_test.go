package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// manyMessages is a completions body of n messages, user and assistant in
// turn, the last one the user's.
func manyMessages(n int) string {
	var b strings.Builder
	b.WriteString(`{"model":"evoclaw","messages":[`)
	for i := range n - 1 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `{"role":%q,"content":"m%d"},`, role, i)
	}
	b.WriteString(`{"role":"user","content":"q"}]}`)
	return b.String()
}

// TestChatCompletionsMessageBound: a request carries at most
// maxCompletionMessages messages; more is refused before anything is
// stored, naming the bound and param messages.
func TestChatCompletionsMessageBound(t *testing.T) {
	node, base, token := startAPI(t, nil, Options{Provider: funcProvider(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}}, nil
	})})
	tests := []struct {
		n      int
		status int
	}{
		{maxCompletionMessages, 200},
		{maxCompletionMessages + 1, 400},
		{100_001, 400}, // the probe's 3.65 MB body, under the 4 MiB bound
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			resp := send(t, "POST", base+"/v1/chat/completions", token, manyMessages(tt.n))
			wantStatus(t, resp, tt.status)
			if tt.status == 200 {
				resp.Body.Close()
				return
			}
			var e errorBody
			decodeBody(t, resp, &e)
			if e.Error.Param == nil || *e.Error.Param != "messages" || !strings.Contains(e.Error.Message, fmt.Sprint(maxCompletionMessages)) {
				t.Fatalf("error %+v, want param messages and the bound %d", e.Error, maxCompletionMessages)
			}
		})
	}
	res, err := sqlite.QueryReadOnly(context.Background(), node.AuditPath(), `SELECT count(DISTINCT conversation_id) FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[1]]" {
		t.Fatalf("conversations stored %s, want only the accepted one's", got)
	}
}

// TestChatCompletionsEmptyArrays: an empty tools, functions or tool_calls
// array is empty whatever its white space.
func TestChatCompletionsEmptyArrays(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	const msgs = `"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","tool_calls":%s},{"role":"user","content":"c"}]`
	tests := []struct {
		name, body string
		status     int
	}{
		{"tools []", `{"model":"evoclaw","tools":[],` + fmt.Sprintf(msgs, "[]") + `}`, 200},
		{"tools [ ]", `{"model":"evoclaw","tools":[ ],` + fmt.Sprintf(msgs, "[]") + `}`, 200},
		{"functions [\\n]", `{"model":"evoclaw","functions":[` + "\n\t" + `],` + fmt.Sprintf(msgs, "[]") + `}`, 200},
		{"tool_calls [ ]", `{"model":"evoclaw",` + fmt.Sprintf(msgs, "[ ]") + `}`, 200},
		{"tools [{}]", `{"model":"evoclaw","tools":[ {} ],` + fmt.Sprintf(msgs, "[]") + `}`, 400},
		{"tools {}", `{"model":"evoclaw","tools":{},` + fmt.Sprintf(msgs, "[]") + `}`, 400},
		{"tool_calls [ {} ]", `{"model":"evoclaw",` + fmt.Sprintf(msgs, "[ {} ]") + `}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := send(t, "POST", base+"/v1/chat/completions", token, tt.body)
			wantStatus(t, resp, tt.status)
			resp.Body.Close()
		})
	}
}

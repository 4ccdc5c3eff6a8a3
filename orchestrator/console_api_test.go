package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/orchestrator/internal/console"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// consoleNode is a node with three stored conversations (a, b, c), each
// one chat long (the scripted player answers each from its first turn).
func consoleNode(t *testing.T) (*Node, string, string) {
	t.Helper()
	node, base, token := startAPI(t, nil, Options{Provider: mustScript(t, `{"name":"c","turns":[
	  {"content":"answer <b>{{user}}</b>"}]}`)})
	for _, id := range []string{"a", "b", "c"} {
		if _, err := node.Chat(context.Background(), id, "question "+id); err != nil {
			t.Fatal(err)
		}
	}
	return node, base, token
}

// apiCase is one request of a table-driven API test and what must come back.
type apiCase struct {
	name, method, path string
	body               any
	status             int
	errType, param     string                       // of the error body; "" for none
	check              func(t *testing.T, b []byte) // of the body, when set
}

func runAPICases(t *testing.T, base, token string, cases []apiCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := send(t, tc.method, base+tc.path, token, tc.body)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.errType != "" {
				var e errorBody
				decodeJSON(t, b, &e)
				param := ""
				if e.Error.Param != nil {
					param = *e.Error.Param
				}
				if e.Error.Type != tc.errType || param != tc.param || e.Error.Message == "" {
					t.Fatalf("error %+v (param %q), want type %s param %q", e.Error, param, tc.errType, tc.param)
				}
			}
			if tc.check != nil {
				tc.check(t, b)
			}
		})
	}
}

func decodeJSON[T any](t *testing.T, b []byte, v *T) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
}

func TestConversationEndpoints(t *testing.T) {
	_, base, token := consoleNode(t)
	var (
		next string
		seen []string
	)
	runAPICases(t, base, token, []apiCase{
		{name: "first page", method: "GET", path: "/v1/conversations?limit=2", status: 200, check: func(t *testing.T, b []byte) {
			var l ConversationList
			decodeJSON(t, b, &l)
			if len(l.Conversations) != 2 || l.NextCursor == "" || l.Conversations[0].MessageCount != 2 {
				t.Fatalf("page %+v", l)
			}
			next = l.NextCursor
			seen = append(seen, l.Conversations[0].ID, l.Conversations[1].ID)
		}},
		{name: "default limit", method: "GET", path: "/v1/conversations", status: 200, check: func(t *testing.T, b []byte) {
			var l ConversationList
			decodeJSON(t, b, &l)
			if len(l.Conversations) != 3 || l.NextCursor != "" {
				t.Fatalf("page %+v", l)
			}
		}},
		{name: "limit 0", method: "GET", path: "/v1/conversations?limit=0", status: 400, errType: ErrTypeInvalidRequest, param: "limit"},
		{name: "limit too large", method: "GET", path: "/v1/conversations?limit=201", status: 400, errType: ErrTypeInvalidRequest, param: "limit"},
		{name: "bad cursor", method: "GET", path: "/v1/conversations?cursor=x", status: 400, errType: ErrTypeInvalidRequest, param: "cursor"},
		{name: "messages", method: "GET", path: "/v1/conversations/c/messages", status: 200, check: func(t *testing.T, b []byte) {
			var l MessageList
			decodeJSON(t, b, &l)
			if len(l.Messages) != 2 || l.More || l.Messages[0].Role != "user" || l.Messages[0].Content != "question c" ||
				l.Messages[1].Content != "answer <b>question c</b>" {
				t.Fatalf("messages %+v", l)
			}
		}},
		{name: "newest message", method: "GET", path: "/v1/conversations/c/messages?limit=1", status: 200, check: func(t *testing.T, b []byte) {
			var l MessageList
			decodeJSON(t, b, &l)
			if len(l.Messages) != 1 || !l.More || l.Messages[0].Seq != 2 {
				t.Fatalf("messages %+v", l)
			}
		}},
		{name: "unknown conversation", method: "GET", path: "/v1/conversations/nobody/messages", status: 404, errType: ErrTypeNotFound},
		{name: "bad id", method: "GET", path: "/v1/conversations/a.b/messages", status: 400, errType: ErrTypeInvalidRequest, param: "id"},
		{name: "messages limit", method: "GET", path: "/v1/conversations/c/messages?limit=501", status: 400, errType: ErrTypeInvalidRequest, param: "limit"},
	})
	runAPICases(t, base, token, []apiCase{{name: "next page", method: "GET", path: "/v1/conversations?limit=2&cursor=" + next, status: 200,
		check: func(t *testing.T, b []byte) {
			var l ConversationList
			decodeJSON(t, b, &l)
			if len(l.Conversations) != 1 || l.NextCursor != "" {
				t.Fatalf("page %+v", l)
			}
			seen = append(seen, l.Conversations[0].ID)
			slices.Sort(seen)
			if fmt.Sprint(seen) != "[a b c]" {
				t.Fatalf("pages held %v", seen)
			}
		}}})
}

func TestAuditSQLEndpoint(t *testing.T) {
	_, base, token := consoleNode(t)
	rows := func(want int, truncated bool) func(*testing.T, []byte) {
		return func(t *testing.T, b []byte) {
			var r AuditSQLResult
			decodeJSON(t, b, &r)
			if len(r.Rows) != want || r.Truncated != truncated || len(r.Columns) == 0 {
				t.Fatalf("result %+v, want %d rows, truncated %v", r, want, truncated)
			}
		}
	}
	runAPICases(t, base, token, []apiCase{
		{name: "select", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELECT conversation_id FROM conversations ORDER BY 1"},
			status: 200, check: rows(3, false)},
		{name: "cut at max_rows", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELECT value FROM json_each('[1,2,3]')", "max_rows": 2},
			status: 200, check: rows(2, true)},
		{name: "blob and null", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELECT x'00ff' AS b, NULL AS n, 1.5 AS f"},
			status: 200, check: func(t *testing.T, b []byte) {
				if !strings.Contains(string(b), `[["x'00ff'",null,1.5]]`) {
					t.Fatalf("%s", b)
				}
			}},
		{name: "delete refused", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "DELETE FROM messages"},
			status: 403, errType: ErrTypePermission, param: "sql"},
		{name: "attach refused", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "ATTACH 'x.db' AS x"},
			status: 403, errType: ErrTypePermission, param: "sql"},
		{name: "syntax", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELEC 1"},
			status: 400, errType: ErrTypeInvalidRequest, param: "sql"},
		{name: "no such table", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELECT * FROM nothing"},
			status: 400, errType: ErrTypeInvalidRequest, param: "sql"},
		{name: "two statements", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELECT 1; SELECT 2"},
			status: 400, errType: ErrTypeInvalidRequest, param: "sql"},
		{name: "report", method: "POST", path: "/v1/audit/sql", body: map[string]any{"report": "tokens-by-conversation"}, status: 200, check: rows(3, false)},
		{name: "report with arg", method: "POST", path: "/v1/audit/sql", body: map[string]any{"report": "conversation", "arg": "b"}, status: 200,
			check: func(t *testing.T, b []byte) {
				if !strings.Contains(string(b), "question b") || strings.Contains(string(b), "question a") {
					t.Fatalf("%s", b)
				}
			}},
		{name: "report without its arg", method: "POST", path: "/v1/audit/sql", body: map[string]any{"report": "conversation"},
			status: 400, errType: ErrTypeInvalidRequest, param: "arg"},
		{name: "unknown report", method: "POST", path: "/v1/audit/sql", body: map[string]any{"report": "nope"},
			status: 400, errType: ErrTypeInvalidRequest, param: "report"},
		{name: "sql and report", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELECT 1", "report": "tools"},
			status: 400, errType: ErrTypeInvalidRequest, param: "report"},
		{name: "empty", method: "POST", path: "/v1/audit/sql", body: map[string]any{}, status: 400, errType: ErrTypeInvalidRequest, param: "sql"},
		{name: "unknown field", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELECT 1", "rows": 3},
			status: 400, errType: ErrTypeInvalidRequest, param: "rows"},
		{name: "max_rows too large", method: "POST", path: "/v1/audit/sql", body: map[string]any{"sql": "SELECT 1", "max_rows": MaxAuditSQLRows + 1},
			status: 400, errType: ErrTypeInvalidRequest, param: "max_rows"},
		{name: "too large", method: "POST", path: "/v1/audit/sql", body: `{"sql": "` + strings.Repeat(" ", maxAuditSQLBody) + `SELECT 1"}`,
			status: 413, errType: ErrTypeInvalidRequest},
		{name: "reports", method: "GET", path: "/v1/audit/reports", status: 200, check: func(t *testing.T, b []byte) {
			var l struct{ Reports []ReportInfo }
			decodeJSON(t, b, &l)
			if len(l.Reports) != len(sqlite.Reports) || l.Reports[0].Query == "" {
				t.Fatalf("reports %+v", l)
			}
		}},
		{name: "status", method: "GET", path: "/v1/audit/status", status: 200, check: func(t *testing.T, b []byte) {
			var s AuditTierStatus
			decodeJSON(t, b, &s)
			if s.Records < 6 || s.HeadSeq < 6 || s.Oldest == nil || s.ColdTier {
				t.Fatalf("status %+v", s)
			}
		}},
	})
}

// TestAuditVerifyEndpoint: GET answers the kept result, POST verifies
// again and sees a forged row.
func TestAuditVerifyEndpoint(t *testing.T) {
	node, base, token := consoleNode(t)
	var first VerifyResult
	runAPICases(t, base, token, []apiCase{
		{name: "first", method: "GET", path: "/v1/audit/verify", status: 200, check: func(t *testing.T, b []byte) {
			decodeJSON(t, b, &first)
			if !first.OK || first.Verified < 6 || first.KeyID == "" || first.CheckedAt.IsZero() {
				t.Fatalf("verify %+v", first)
			}
		}},
	})
	db, err := sql.Open("sqlite", node.AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE messages SET body = '{"role":"user","content":"forged"}' WHERE conversation_id = 'b' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	runAPICases(t, base, token, []apiCase{
		{name: "kept", method: "GET", path: "/v1/audit/verify", status: 200, check: func(t *testing.T, b []byte) {
			var v VerifyResult
			decodeJSON(t, b, &v)
			if !v.OK || !v.CheckedAt.Equal(first.CheckedAt) {
				t.Fatalf("GET ran again: %+v", v)
			}
		}},
		{name: "again", method: "POST", path: "/v1/audit/verify", status: 200, check: func(t *testing.T, b []byte) {
			var v VerifyResult
			decodeJSON(t, b, &v)
			if v.OK || v.Broken == nil || v.Broken.Table != "messages" || v.Error == "" {
				t.Fatalf("forged chain: %+v", v)
			}
		}},
	})
}

func TestAgentsEndpoint(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, `{"name":"x","turns":[{"content":"hi"}]}`)})
	resp := send(t, "GET", base+"/v1/agents", token, nil)
	var l AgentList
	etag := resp.Header.Get("ETag")
	decodeBody(t, resp, &l)
	if resp.StatusCode != 200 || l.Agents == nil || len(l.Agents) != 0 || etag == "" {
		t.Fatalf("status %d, %+v, etag %q", resp.StatusCode, l, etag)
	}
	resp = send(t, "GET", base+"/v1/agents", token, nil, "If-None-Match", etag)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("same list: status %d, want 304", resp.StatusCode)
	}
}

// TestConsoleRoutes: the page and its assets need no token and carry the
// security headers; every /v1 endpoint the console uses needs the token.
func TestConsoleRoutes(t *testing.T) {
	_, base, _ := startAPI(t, nil, Options{Provider: mustScript(t, `{"name":"x","turns":[{"content":"hi"}]}`)})
	for _, tc := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8"},
		{"HEAD", "/", 200, "text/html; charset=utf-8"},
		{"GET", "/ui/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/ui/style.css", 200, "text/css; charset=utf-8"},
		{"GET", "/ui/index.html", 200, "text/html; charset=utf-8"},
		{"GET", "/ui/nothing.js", 404, "text/plain; charset=utf-8"},
		{"GET", "/ui/%2e%2e/httpapi.go", 404, "text/plain; charset=utf-8"},
		{"POST", "/", 405, "application/json"},
		{"GET", "/nothing", 404, "application/json"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp := send(t, tc.method, base+tc.path, "", nil)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype {
				t.Fatalf("content type %q, want %q", resp.Header.Get("Content-Type"), tc.ctype)
			}
			if strings.HasPrefix(tc.path, "/ui/") || tc.path == "/" && tc.method != "POST" {
				h := resp.Header
				if h.Get("Content-Security-Policy") != console.CSP || h.Get("X-Content-Type-Options") != "nosniff" ||
					h.Get("Referrer-Policy") != "no-referrer" {
					t.Fatalf("headers %v", h)
				}
			}
		})
	}
	for _, ep := range []string{"GET /v1/agents", "GET /v1/conversations", "GET /v1/conversations/a/messages", "POST /v1/audit/sql",
		"GET /v1/audit/reports", "GET /v1/audit/status", "GET /v1/audit/verify", "POST /v1/audit/verify"} {
		method, path, _ := strings.Cut(ep, " ")
		resp := send(t, method, base+path, "", `{"sql":"SELECT 1"}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a token: status %d", ep, resp.StatusCode)
		}
	}
	// An unchanged asset is answered 304 to a revalidation.
	resp := send(t, "GET", base+"/ui/app.js", "", nil)
	resp.Body.Close()
	resp = send(t, "GET", base+"/ui/app.js", "", nil, "If-None-Match", resp.Header.Get("ETag"))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: status %d", resp.StatusCode)
	}
}

func TestParseCursor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want sqlite.ConversationCursor
		ok   bool
	}{
		{"", sqlite.ConversationCursor{}, true},
		{"1700000000000.chat-1", sqlite.ConversationCursor{LastMs: 1700000000000, ID: "chat-1"}, true},
		{"0.a", sqlite.ConversationCursor{ID: "a"}, true},
		{"1.a.b", sqlite.ConversationCursor{}, false},
		{"-1.a", sqlite.ConversationCursor{}, false},
		{"x.a", sqlite.ConversationCursor{}, false},
		{"1.", sqlite.ConversationCursor{}, false},
		{"1", sqlite.ConversationCursor{}, false},
		{"1." + strings.Repeat("a", 100), sqlite.ConversationCursor{}, false},
	} {
		got, err := parseCursor(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseCursor(%q) = %+v, %v", tc.in, got, err)
		}
		if err == nil && tc.in != "" && formatCursor(got) != tc.in {
			t.Errorf("formatCursor(%+v) = %q, want %q", got, formatCursor(got), tc.in)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "1.a", "1700000000000.chat-1", "x", "1.a.b", "-0.a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCursor(s)
		if err != nil {
			return
		}
		if s != "" {
			back, err := parseCursor(formatCursor(c))
			if err != nil || back != c {
				t.Fatalf("%q: %+v does not round-trip: %+v, %v", s, c, back, err)
			}
		}
	})
}

func FuzzDecodeAuditSQLRequest(f *testing.F) {
	for _, s := range []string{`{"sql":"SELECT 1"}`, `{"report":"conversation","arg":"x"}`, `{"report":"tools","max_rows":3}`,
		`{}`, `[]`, `{"sql":1}`, `{"sql":"a"} x`, `{"max_rows":-1,"sql":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q, _, err := decodeAuditSQLRequest(b)
		if err != nil {
			return
		}
		if strings.TrimSpace(q.sql) == "" || q.maxRows < 1 || q.maxRows > MaxAuditSQLRows || len(q.args) > 1 {
			t.Fatalf("%q accepted as %+v", b, q)
		}
	})
}

package orchestrator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSloppyRequestsAnswerTheErrorBody: requests a careless or hostile
// client sends are refused with a 4xx and the API's error body, never
// answered as if they were fine. Before, a path with a doubled slash or a
// "." or ".." segment got the router's empty 307 (a client that joins a
// base URL ending in "/" and a path made every request one); a query that did not parse lost
// its bad pairs and answered 200 with the defaults; a second Authorization
// header, or a second X-Evoclaw-Conversation naming another conversation,
// was ignored for the first.
func TestSloppyRequestsAnswerTheErrorBody(t *testing.T) {
	_, base, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	chat := `{"text":"hi"}`
	completion := `{"model":"evoclaw","messages":[{"role":"user","content":"hi"}]}`
	for _, tt := range []struct {
		name, method, path, body string
		headers                  []string // name, value, ...; Authorization: Bearer TOKEN is added first
		status                   int
		typ, msg                 string
	}{
		{"doubled slash", "GET", "/v1//jobs", "", nil, 404, ErrTypeNotFound, "the clean path is /v1/jobs"},
		{"leading doubled slash, POST", "POST", "//v1/chat/completions", completion, nil, 404, ErrTypeNotFound, "the clean path is /v1/chat/completions"},
		{"dot-dot", "GET", "/v1/jobs/../status", "", nil, 404, ErrTypeNotFound, "the clean path is /v1/status"},
		{"dot", "GET", "/v1/./models", "", nil, 404, ErrTypeNotFound, "the clean path is /v1/models"},
		{"dot-dot at the end", "GET", "/v1/jobs/..", "", nil, 404, ErrTypeNotFound, "the clean path is /v1"},
		{"bad escape in the query", "GET", "/v1/runs?limit=%zz", "", nil, 400, ErrTypeInvalidRequest, `query: invalid URL escape "%zz"`},
		{"semicolon in the query", "GET", "/v1/logs?limit=1;kind=tool", "", nil, 400, ErrTypeInvalidRequest, "query: invalid semicolon separator"},
		{"two Authorization headers", "GET", "/v1/jobs", "", []string{"Authorization", "Bearer wrong"}, 400, ErrTypeInvalidRequest, "more than one Authorization header"},
		{"two conversations in headers, chat", "POST", "/v1/chat", chat,
			[]string{ConversationHeader, "conv-a", ConversationHeader, "conv-b"}, 400, ErrTypeInvalidRequest, "given more than once"},
		{"two conversations in headers, completions", "POST", "/v1/chat/completions", completion,
			[]string{ConversationHeader, "conv-a", ConversationHeader, "conv-b"}, 400, ErrTypeInvalidRequest, "given more than once"},
		// encoding/json made each bad byte U+FFFD without a word.
		{"Latin-1 chat", "POST", "/v1/chat", "{\"text\":\"caf\xe9\"}", nil, 400, ErrTypeInvalidRequest, "body: not valid UTF-8 (at byte 12)"},
		{"Latin-1 completion", "POST", "/v1/chat/completions", "{\"model\":\"evoclaw\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
			nil, 400, ErrTypeInvalidRequest, "body: not valid UTF-8 (at byte 57)"},
		{"Latin-1 job", "POST", "/v1/jobs", "{\"id\":\"j\",\"schedule\":\"@daily\",\"prompt\":\"\xe9t\xe9\"}", nil, 400, ErrTypeInvalidRequest, "not valid UTF-8"},
		// What is still served.
		{"the same conversation twice", "POST", "/v1/chat", chat, []string{ConversationHeader, "conv-c", ConversationHeader, "conv-c"}, 200, "", ""},
		{"an escaped slash in an id", "GET", "/v1/jobs/a%2F..", "", nil, 404, ErrTypeNotFound, "no such job"},
		{"a clean query", "GET", "/v1/runs?limit=5&job=", "", nil, 200, "", ""},
		{"UTF-8 and an escaped lone surrogate", "POST", "/v1/chat", `{"text":"café \ud800"}`, nil, 200, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Add("Authorization", "Bearer "+token)
			for i := 0; i+1 < len(tt.headers); i += 2 {
				req.Header.Add(tt.headers[i], tt.headers[i+1])
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, resp, tt.status)
			var e errorBody // an answer's fields are not an error's: it decodes empty
			decodeBody(t, resp, &e)
			if e.Error.Type != tt.typ || !strings.Contains(e.Error.Message, tt.msg) {
				t.Fatalf("error %+v, want type %s and %q", e.Error, tt.typ, tt.msg)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}

// TestBodyRefusedBeforeItIsSent: a body whose Content-Length is over the
// endpoint's bound is refused 413 at once, without "100 Continue" to a
// client that asked (curl does past 1 MiB), which then sent megabytes
// for nothing; a body that stops coming is 408 after the body bound,
// said as such (it was 400 with the connection's "i/o timeout").
func TestBodyRefusedBeforeItIsSent(t *testing.T) {
	limits := httpLimits{Body: 300 * time.Millisecond}
	node, _, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript), httpLimits: limits})
	addr := node.HTTPAddr()
	for _, tt := range []struct {
		name, path string
		announced  int64
		sent       string
		status     int
		msg        string
	}{
		{"chat, 2 MiB announced", "/v1/chat", 2 << 20, "", 413, "body larger than 1048576 bytes (Content-Length 2097152)"},
		{"completions, 5 MB announced", "/v1/chat/completions", 5e6, "", 413, "body larger than 4194304 bytes"},
		{"job, 10 GB announced", "/v1/jobs", 1e10, "", 413, "body larger than 65536 bytes"},
		{"job body stops", "/v1/jobs", 100, `{"id":`, 408, "the body did not arrive in time (6 of its bytes came)"},
		{"chunked body stops", "/v1/audit/sql", -1, "5\r\n{\"sql\r\n", 408, "the body did not arrive in time"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			length := fmt.Sprintf("Content-Length: %d\r\n", tt.announced)
			if tt.sent == "" {
				length += "Expect: 100-continue\r\n" // answered first: it was "100 Continue"
			}
			if tt.announced < 0 {
				length = "Transfer-Encoding: chunked\r\n"
			}
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%s\r\n%s", tt.path, token, length, tt.sent)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			var e errorBody
			b, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("%s: %v: %q", resp.Status, err, b)
			}
			if resp.StatusCode != tt.status || e.Error.Type != ErrTypeInvalidRequest || !strings.Contains(e.Error.Message, tt.msg) {
				t.Fatalf("%s %+v; want %d, %q", resp.Status, e.Error, tt.status, tt.msg)
			}
			if !resp.Close {
				t.Fatal("the connection is kept after a body that was not read")
			}
		})
	}
}

// FuzzCleanPath: a path refuseUncleanPaths lets through is one
// http.ServeMux routes as it is, without the redirect it answers to a
// path it cleans.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "//", "/v1//jobs", "/v1/jobs/..", "/v1/./x", "/v1/jobs/a%2F..", "/a/", "/..", "/a/b/../../..", "x"} {
		f.Add(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(http.ResponseWriter, *http.Request) {})
	f.Fuzz(func(t *testing.T, p string) {
		clean := cleanPath(p)
		if cleanPath(clean) != clean || !strings.HasPrefix(clean, "/") {
			t.Fatalf("cleanPath(%q) = %q, not clean", p, clean)
		}
		if clean != p || strings.ContainsAny(p, "?#") {
			return
		}
		r, err := http.NewRequest("GET", "http://x"+p, nil)
		if err != nil || r.URL.EscapedPath() != p {
			return // not a path a request can carry as it is
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%q, clean, is answered %d by the router: %s", p, w.Code, w.Header().Get("Location"))
		}
	})
}

// TestBodyTooLargeAnsweredAfterUpload: a client that sends a body over the
// endpoint's limit whole before it reads the answer, as Go's, Node's and
// Python's clients do without "Expect: 100-continue", gets the 413. Refused
// at once, the body was left unread and the client's upload found the
// connection reset: "connection reset by peer" instead of the answer (an
// emulated ARM board's CI run, and an SDK retries such an error).
func TestBodyTooLargeAnsweredAfterUpload(t *testing.T) {
	node, _, token := startAPI(t, nil, Options{Provider: mustScript(t, helloTranscript)})
	addr := node.HTTPAddr()
	for _, tt := range []struct {
		path string
		size int
	}{{"/v1/chat/completions", maxCompletionBody + 1<<20}, {"/v1/chat", 3 << 20}} {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tt.path, token, tt.size)
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write(bytes.Repeat([]byte("x"), tt.size)); err != nil {
			t.Fatalf("%s: the upload of %d bytes failed: %v", tt.path, tt.size, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "body larger than") {
			t.Fatalf("%s: %s %s, want 413", tt.path, resp.Status, b)
		}
	}
}

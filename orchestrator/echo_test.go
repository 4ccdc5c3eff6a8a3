package orchestrator

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEcho(t *testing.T) {
	long := strings.Repeat("a", 3000)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "job-1", "job-1"},
		{"at the bound", strings.Repeat("b", maxEcho), strings.Repeat("b", maxEcho)},
		{"under the bound, not UTF-8", "\xdc\xdc" + strings.Repeat("d", maxEcho-3), "\xdc\xdc" + strings.Repeat("d", maxEcho-3)},
		{"one past it", strings.Repeat("c", maxEcho+1), strings.Repeat("c", echoPrefix) + "...(65 bytes)"},
		{"long", long, strings.Repeat("a", echoPrefix) + "...(3000 bytes)"},
		// é is two bytes: after "a" the cut falls inside the 16th, left out
		{"cut inside a character", "a" + strings.Repeat("é", 40), "a" + strings.Repeat("é", 15) + "...(81 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := echo(tc.in)
			if got != tc.want {
				t.Fatalf("echo = %q, want %q", got, tc.want)
			}
			if utf8.ValidString(tc.in) && !utf8.ValidString(got) {
				t.Fatalf("echo = %q: not UTF-8", got)
			}
		})
	}
}

// Every endpoint whose error repeats a value of the request's path or
// query repeats at most echo of it: a 404 for an approval id of 3,000
// bytes answered 3,109 bytes, the id whole. Over a real node and socket,
// for each endpoint: the status it gives such a request, a message that
// names the value's start and size, and not the rest of it.
func TestErrorsEchoBoundedInput(t *testing.T) {
	on := true
	p := mustScript(t, `{"name":"j","turns":[{"content":"all fine"}]}`)
	_, base, token := startAPI(t, func(c *Config) { c.Loop.QuestionTool = &on }, Options{Provider: p})
	// Letters, then what a path escapes or a %q quotes.
	id := strings.Repeat("x", 40) + strings.Repeat(`q"é\`, 700)
	esc := url.PathEscape(id)
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{http.MethodGet, "/v1/jobs/" + esc, "", http.StatusNotFound},
		{http.MethodDelete, "/v1/jobs/" + esc, "", http.StatusNotFound},
		{http.MethodPost, "/v1/jobs/" + esc + "/pause", "", http.StatusNotFound},
		{http.MethodPost, "/v1/jobs/" + esc + "/resume", "", http.StatusNotFound},
		{http.MethodPost, "/v1/jobs/" + esc + "/run", "", http.StatusNotFound},
		{http.MethodGet, "/v1/runs?job=" + url.QueryEscape(id), "", http.StatusNotFound},
		{http.MethodGet, "/v1/approvals/" + esc, "", http.StatusNotFound},
		{http.MethodPost, "/v1/approvals/" + esc + "/approve", `{"by":"alice"}`, http.StatusNotFound},
		{http.MethodPost, "/v1/approvals/" + esc + "/deny", `{"by":"alice"}`, http.StatusNotFound},
		{http.MethodPost, "/v1/chat/questions/" + esc, `{"answer":"yes"}`, http.StatusNotFound},
		{http.MethodGet, "/v1/conversations/" + esc + "/messages", "", http.StatusBadRequest},
		{http.MethodGet, "/v1/models/" + esc, "", http.StatusNotFound},
		{http.MethodGet, "/v1/no-such-endpoint/" + esc, "", http.StatusNotFound},
		{http.MethodPut, "/v1/jobs/" + esc, "", http.StatusMethodNotAllowed},
	} {
		t.Run(tc.method+" "+tc.path[:min(len(tc.path), 30)], func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			resp := send(t, tc.method, base+tc.path, token, body)
			if resp.StatusCode != tc.status {
				resp.Body.Close()
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			var e errorBody
			decodeBody(t, resp, &e)
			msg := e.Error.Message
			if msg == "" {
				t.Fatal("no message")
			}
			if len(msg) > 300 {
				t.Fatalf("a message of %d bytes: %.200s", len(msg), msg)
			}
			if strings.Contains(msg, id[:echoPrefix+8]) || strings.Contains(msg, esc[:echoPrefix+8]) {
				t.Fatalf("repeats more than %d bytes of the value: %s", echoPrefix, msg)
			}
			if tc.method == http.MethodPost && strings.HasPrefix(tc.path, "/v1/chat/questions/") {
				return // says only that no such question waits
			}
			size := len(id)
			if strings.Contains(msg, "endpoint") || strings.Contains(msg, "method not allowed") {
				size = len("/v1/no-such-endpoint/" + id)
				if tc.method == http.MethodPut {
					size = len("/v1/jobs/" + id)
				}
			}
			if !strings.Contains(msg, fmt.Sprintf("(%d bytes)", size)) {
				t.Fatalf("does not give the value's size %d: %s", size, msg)
			}
		})
	}
}

// FuzzEchoed: whatever a path value and a query hold, a message that
// repeats them (as they are, or quoted) repeats at most echo of each, and
// echo keeps valid UTF-8 valid.
func FuzzEchoed(f *testing.F) {
	f.Add(strings.Repeat("x", 100), "a=b")
	f.Add(`q"é\`+strings.Repeat("é", 60), "job="+strings.Repeat("%22", 40))
	f.Add("short", "")
	f.Fuzz(func(t *testing.T, id, query string) {
		r, err := http.NewRequest(http.MethodGet, "http://node/v1/jobs/x?"+query, nil)
		if err != nil {
			t.Skip()
		}
		r.Pattern = "GET /v1/jobs/{id}"
		r.SetPathValue("id", id)
		values := requestValues(r)
		msg := "no such job: " + fmt.Sprintf("%q", id) + " (" + id + ")"
		for _, v := range values {
			msg += " " + v
		}
		got := echoed(r, msg)
		for _, v := range values {
			if len(v) > maxEcho && strings.Contains(got, v) {
				t.Fatalf("echoed kept %d bytes whole: %.100q", len(v), got)
			}
		}
		// An id of up to maxEcho bytes is echoed whole, a longer one as
		// its start and size.
		e := echo(id)
		if len(id) <= maxEcho && e != id || len(id) > maxEcho && len(e) > echoPrefix+len("...(bytes)")+20 || (utf8.ValidString(id) && !utf8.ValidString(e)) {
			t.Fatalf("echo(%q) = %q", id, e)
		}
	})
}

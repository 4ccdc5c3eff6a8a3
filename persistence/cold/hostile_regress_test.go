package cold

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// These tests point a cold Store at a broken or hostile libSQL server
// (startHostile) and check what it may cost the node.

// TestColdTierMalformedAnswerIsAnError: answers the client library indexes
// into without checking end the request with an error, not the process.
func TestColdTierMalformedAnswerIsAnError(t *testing.T) {
	exec := func(res string) func(hostileRequest) string {
		return func(req hostileRequest) string { return okAnswer(req, res) }
	}
	for _, tc := range []struct {
		name   string
		answer func(hostileRequest) string
	}{
		{"no results", func(hostileRequest) string { return `{"baton":null,"results":[]}` }},
		{"integer given as a number", exec(`{"cols":[{"name":"v"}],"rows":[[{"type":"integer","value":7}]]}`)},
		{"integer without a value", exec(`{"cols":[{"name":"v"}],"rows":[[{"type":"integer"}]]}`)},
		{"row shorter than its columns", exec(`{"cols":[{"name":"a"},{"name":"b"}],"rows":[[]]}`)},
		{"datetime column with a number", exec(`{"cols":[{"name":"t","decltype":"datetime"}],"rows":[[{"type":"text","value":1}]]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostile(t, func(w http.ResponseWriter, _ *http.Request, req hostileRequest) {
				io.WriteString(w, tc.answer(req))
			})
			c := openCold(t, h.URL, "")
			ctx := context.Background()
			if _, err := c.HasSummaries(ctx); err == nil {
				t.Error("HasSummaries: no error")
			}
			if _, err := c.Chains(ctx); err == nil {
				t.Error("Chains: no error")
			}
			if _, _, err := c.Query(ctx, "SELECT chain_id FROM chains"); err == nil {
				t.Error("Query: no error")
			}
		})
	}
}

// TestColdTierTokenStaysWithTheServer: neither a redirect nor an answer's
// base_url takes the token (or the statements) to another server, not even
// another port of the same host.
func TestColdTierTokenStaysWithTheServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, req hostileRequest, other string)
	}{
		{"307 to another port", func(w http.ResponseWriter, r *http.Request, _ hostileRequest, other string) {
			http.Redirect(w, r, other+r.URL.Path, http.StatusTemporaryRedirect)
		}},
		{"308 to another port", func(w http.ResponseWriter, r *http.Request, _ hostileRequest, other string) {
			http.Redirect(w, r, other+r.URL.Path, http.StatusPermanentRedirect)
		}},
		{"302 to another port", func(w http.ResponseWriter, r *http.Request, _ hostileRequest, other string) {
			http.Redirect(w, r, other+r.URL.Path, http.StatusFound)
		}},
		{"base_url of another port", func(w http.ResponseWriter, _ *http.Request, req hostileRequest, other string) {
			io.WriteString(w, strings.Replace(okAnswer(req, ""), `"baton":null`, fmt.Sprintf(`"baton":"b1","base_url":%q`, other), 1))
		}},
		{"BASE_URL of another port", func(w http.ResponseWriter, _ *http.Request, req hostileRequest, other string) {
			io.WriteString(w, strings.Replace(okAnswer(req, ""), `"baton":null`, fmt.Sprintf(`"baton":"b1","BASE_URL":%q`, other), 1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			thief := startHostile(t, func(w http.ResponseWriter, _ *http.Request, req hostileRequest) {
				io.WriteString(w, okAnswer(req, ""))
			})
			h := startHostile(t, func(w http.ResponseWriter, r *http.Request, req hostileRequest) {
				tc.answer(w, r, req, thief.URL)
			})
			c := openCold(t, h.URL, "secret-token")
			ctx := context.Background()
			for range 3 {
				c.Chains(ctx)
				c.recheckSchema()
			}
			if len(h.requests()) == 0 {
				t.Fatal("the server got no request")
			}
			if got := thief.requests(); len(got) != 0 {
				t.Fatalf("another server got %d requests, Authorization %q", len(got), got[0])
			}
		})
	}
}

// TestColdTierAnswerIsBounded: a server answering far more than any
// legitimate answer is not read to its end: the client stops early.
func TestColdTierAnswerIsBounded(t *testing.T) {
	const total = 256 << 20
	sent := make(chan int64, 16)
	h := startHostile(t, func(w http.ResponseWriter, _ *http.Request, _ hostileRequest) {
		var n int64
		defer func() { sent <- n }()
		head := `{"baton":null,"results":[{"type":"ok","response":{"type":"execute","result":{"cols":[{"name":"x"}],"rows":[[{"type":"text","value":"`
		m, err := io.WriteString(w, head)
		n += int64(m)
		chunk := []byte(strings.Repeat("A", 1<<16))
		for err == nil && n < total {
			m, err = w.Write(chunk)
			n += int64(m)
		}
		if err == nil {
			io.WriteString(w, `"}]]}}}]}`)
		}
	})
	c := openCold(t, h.URL, "")
	if _, err := c.HasSummaries(context.Background()); err == nil {
		t.Error("no error for an answer of 256 MiB")
	}
	select {
	case n := <-sent:
		if n >= total {
			t.Fatalf("the client read the whole answer, %d bytes", n)
		}
		t.Logf("the server wrote %d MiB before the client stopped", n>>20)
	case <-time.After(time.Minute):
		t.Fatal("the server never finished its answer")
	}
}

// TestColdTierErrorTextIsPrintable: what a server puts in an error reaches
// logs, status and terminals escaped and cut.
func TestColdTierErrorTextIsPrintable(t *testing.T) {
	hostileText := "bad\x1b]0;pwned\x07\x1b[2J\r\u202eX\x9b31m\xff" + strings.Repeat("y", 1<<20)
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"error field", http.StatusBadRequest, `{"error":` + jsonString(hostileText) + `}`},
		{"plain text", http.StatusInternalServerError, hostileText},
		{"statement error", http.StatusOK, `{"results":[{"type":"error","error":{"message":` + jsonString(hostileText) + `}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostile(t, func(w http.ResponseWriter, _ *http.Request, _ hostileRequest) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			c := openCold(t, h.URL, "")
			_, err := c.HasSummaries(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if len(msg) > 4096 {
				t.Errorf("error text of %d bytes", len(msg))
			}
			if !utf8.ValidString(msg) {
				t.Errorf("error text is not UTF-8: %q", msg[:min(len(msg), 200)])
			}
			for _, r := range msg {
				if !unicode.IsPrint(r) {
					t.Fatalf("error text holds %U: %q", r, msg[:min(len(msg), 200)])
				}
			}
		})
	}
}

// jsonString returns s as a JSON string, its invalid UTF-8 kept as bytes
// (a JSON encoder would replace them).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), `\ufffd`, "\xff")
}

// TestColdTierStreamCloseIsBounded: the library closes a dropped stream in
// a request of its own with no deadline; against a server that never
// answers it, each used to keep a goroutine for as long as the server
// held the connection.
func TestColdTierStreamCloseIsBounded(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	h := startHostile(t, func(w http.ResponseWriter, _ *http.Request, req hostileRequest) {
		for _, r := range req.Requests {
			switch {
			case r.Type == "close":
				<-stop // never answered while the test runs
				return
			case r.Stmt != nil && strings.HasPrefix(r.Stmt.SQL, "SELECT"):
				io.WriteString(w, `{"baton":"b","results":[{"type":"error","error":{"message":"no"}}]}`)
				return
			}
		}
		io.WriteString(w, strings.Replace(okAnswer(req, ""), `"baton":null`, `"baton":"b"`, 1))
	})
	c, err := Open(Config{URL: h.URL, RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const drops = 10
	for range drops {
		// BEGIN opens a stream, the SELECT fails, the connection is
		// dropped: the library sends a close for its stream.
		if _, _, err := c.Query(context.Background(), "SELECT chain_id FROM chains"); err == nil {
			t.Fatal("Query: no error")
		}
	}
	if n := stuckInRequest(); n == 0 {
		t.Logf("no close request was in flight yet")
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return stuckInRequest() == 0 },
		"every stream close ended")
}

// stuckInRequest counts the goroutines inside the client library's
// request function (its name, sendPipelineRequest, is the library's).
func stuckInRequest() int {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "hranaV2.sendPipelineRequest") {
			n++
		}
	}
	return n
}

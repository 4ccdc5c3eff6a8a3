package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// hugeAnswers is a streamable HTTP MCP server, as plain JSON over POST or
// as an event stream, whose tool answers with a text of size bytes, all
// on one data line or, when split is set, on data lines of split bytes.
func hugeAnswers(size int, stream bool, split int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, ok := readCall(w, r)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if stream && m.Method == "tools/call" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: ")
			defer fmt.Fprint(w, "\n\n")
			if split > 0 { // the text on data lines of split bytes
				w = splitLines{w, split}
			}
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}}`, m.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}`, m.ID)
		case "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, m.ID, strings.Repeat("B", size))
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
		}
	})
}

// splitLines writes what it is given on data lines of n bytes.
type splitLines struct {
	http.ResponseWriter
	n int
}

func (s splitLines) Write(b []byte) (int, error) {
	for i := 0; i < len(b); i += s.n {
		if i > 0 {
			fmt.Fprint(s.ResponseWriter, "\ndata: ")
		}
		if _, err := s.ResponseWriter.Write(b[i:min(i+s.n, len(b))]); err != nil {
			return i, err
		}
	}
	return len(b), nil
}

// call is a JSON-RPC request a test server reads.
type call struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// readCall reads the call a POST of a streamable HTTP client carries; it
// answers what is not a call (a GET, a notification) itself, and then
// returns false.
func readCall(w http.ResponseWriter, r *http.Request) (call, bool) {
	var m call
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return m, false
	}
	if b, err := io.ReadAll(r.Body); err != nil || json.Unmarshal(b, &m) != nil || len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification
		return m, false
	}
	return m, true
}

// httpTools connects to the streamable HTTP server h serves and returns
// its tools.
func httpTools(t *testing.T, h http.Handler) []skills.GoTool {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	set, errs := Connect(context.Background(), map[string]ServerConfig{"h": {URL: srv.URL}}, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { set.Close() })
	tools, _ := set.Tools()
	return tools
}

// TestHTTPResponseBound: an HTTP server's answer past MaxResponseBytes
// fails the call instead of being read whole. Before, a 1 GiB answer took
// evoclaw serve to 12 GB of memory. (A call's answer is bounded far lower
// since, by MaxResultBytes: TestCallResultBound.)
func TestHTTPResponseBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		wantType wire.ErrorType
	}{
		{"within the bound", MaxResultBytes - 1024, ""},
		{"past the bound", MaxResponseBytes, wire.ErrExecutionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := httpTools(t, hugeAnswers(tc.size, false, 0))
			out := tools[0].Run(context.Background(), nil)
			if out.ErrorType() != tc.wantType {
				t.Fatalf("error type %q, want %q", out.ErrorType(), tc.wantType)
			}
			if tc.wantType != "" && !strings.Contains(out.ErrorText(), ErrResultTooLarge.Error()) {
				t.Errorf("error %q, want it to name %q", out.ErrorText(), ErrResultTooLarge)
			}
		})
	}
}

// TestHTTPAnswerThatIsNoMessage: an HTTP server's JSON answer to a call
// that is not a JSON-RPC message (a text, an object of its own, an answer
// without "jsonrpc") fails that call, naming why, and the session goes on:
// the next call is answered without a new initialize. Before, the SDK
// ended the session and the agent started it again.
func TestHTTPAnswerThatIsNoMessage(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"text", `Debug: oops`, `invalid character 'D' looking for beginning of value; it starts "Debug: oops"`},
		{"object", `{"log":"handled"}`, `invalid message version tag`},
		{"answer without jsonrpc", `{"id":%s,"result":{}}`, `invalid message version tag`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inits, calls atomic.Int32
			tools := httpTools(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				m, ok := readCall(w, r)
				if !ok {
					return
				}
				w.Header().Set("Content-Type", "application/json")
				switch m.Method {
				case "initialize":
					inits.Add(1)
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}}`, m.ID)
				case "tools/list":
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}`, m.ID)
				case "tools/call":
					if calls.Add(1) == 1 {
						body := tc.body
						if strings.Contains(body, "%s") {
							body = fmt.Sprintf(body, m.ID)
						}
						fmt.Fprint(w, body)
						return
					}
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, m.ID)
				default:
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
				}
			}))
			out := tools[0].Run(context.Background(), nil)
			if out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(out.ErrorText(), "the server's answer is not a JSON-RPC message") ||
				!strings.Contains(out.ErrorText(), tc.want) {
				t.Errorf("first call: error %q (%s), want execution_failed naming %q", out.ErrorText(), out.ErrorType(), tc.want)
			}
			if out := tools[0].Run(context.Background(), nil); out.ErrorType() != "" || out.Text() != "ok" {
				t.Fatalf("second call: %q, error %q", out.Text(), out.ErrorText())
			}
			if n := inits.Load(); n != 1 {
				t.Errorf("%d initialize requests, want 1: the session went on", n)
			}
		})
	}
}

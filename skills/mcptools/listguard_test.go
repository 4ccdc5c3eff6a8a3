package mcptools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestListPageBounds: a stdio server's page of tools is refused before the
// SDK decodes it when it lists more than MaxTools tools or is larger than
// MaxListPage, so the decoding's cost (about 6 KB a tool) never comes.
// Before, 100,000 tiny tools in one page took the agent to 631 MB, and
// the page was refused only after it was decoded.
func TestListPageBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantMsg string // in the connect error; "" for none
	}{
		{"tools at the bound", []string{"tools", fmt.Sprint(MaxTools), "0"}, ""},
		{"tiny tools past it", []string{"tools", "20000", "0"}, "a page of 20000 tools"},
		{"a page past its bytes", []string{"tools", "50", "100000"}, fmt.Sprintf("more than %d", MaxListPage)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, errs := connectHostile(t, tc.args...)
			checkListErrors(t, set, errs, tc.wantMsg)
		})
	}
}

// checkListErrors checks Connect's errors against wantMsg: none, or one
// that is ErrListTooLarge and says wantMsg; without one, every tool of
// the server is offered.
func checkListErrors(t *testing.T, set *Set, errs []error, wantMsg string) {
	t.Helper()
	if wantMsg == "" {
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if tools, _ := set.Tools(); len(tools) != MaxTools {
			t.Fatalf("%d tools offered, want %d", len(tools), MaxTools)
		}
		return
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrListTooLarge) || !strings.Contains(errs[0].Error(), wantMsg) {
		t.Fatalf("connect errors %v, want %v saying %q", errs, ErrListTooLarge, wantMsg)
	}
}

// listingServer is a streamable HTTP MCP server that lists n tools in one
// page, answering in an event stream when sse is set, else as JSON.
func listingServer(n int, sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, ok := readCall(w, r)
		if !ok {
			return
		}
		var msg string
		switch m.Method {
		case "initialize":
			msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}}`, m.ID)
		case "tools/list":
			tools := make([]string, n)
			for i := range tools {
				tools[i] = fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, i)
			}
			msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[%s]}}`, m.ID, strings.Join(tools, ","))
		default:
			msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
		}
		if !sse {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, msg)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// A notification first, as servers send progress, then the answer
		// with its data split over two lines between two of its members.
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
		half := strings.LastIndex(msg, `,"`)
		fmt.Fprintf(w, "event: message\ndata: %s\ndata: %s\n\n", msg[:half], msg[half:])
	})
}

// TestHTTPListPageBounds: an HTTP server's page is held to the bounds a
// stdio server's is, whether it answers as JSON or in an event stream.
func TestHTTPListPageBounds(t *testing.T) {
	for _, sse := range []bool{false, true} {
		for _, tc := range []struct {
			name    string
			n       int
			wantMsg string
		}{
			{"tools at the bound", MaxTools, ""},
			{"tiny tools past it", 20000, "a page of 20000 tools"},
			{"a page past its bytes", 120000, fmt.Sprintf("more than %d bytes", MaxListPage)},
		} {
			t.Run(fmt.Sprintf("%s/sse=%v", tc.name, sse), func(t *testing.T) {
				srv := httptest.NewServer(listingServer(tc.n, sse))
				t.Cleanup(srv.Close)
				set, errs := Connect(context.Background(), map[string]ServerConfig{"h": {URL: srv.URL}}, nil)
				t.Cleanup(func() { set.Close() })
				checkListErrors(t, set, errs, tc.wantMsg)
			})
		}
	}
}

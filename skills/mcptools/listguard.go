package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxListPage bounds one page of a server's tool list as it arrives,
// before the SDK decodes it; a page may also list at most MaxTools tools.
// The SDK's decoding of a tool costs far more than its bytes: 100,000
// tools of 70 bytes in one 7 MB page took the agent to 631 MB. Twice
// MaxListBytes leaves room for whitespace and for tools that list()
// leaves out for their size.
const MaxListPage = 2 * MaxListBytes

// codeListTooLarge is the JSON-RPC error code a page that checkListPage
// refuses is answered with, in place of the server's result; list() turns
// it into ErrListTooLarge.
const codeListTooLarge = -32099

// checkListPage returns an error when a tools/list result is larger than
// MaxListPage or lists more than MaxTools tools, and nil otherwise (also
// when it is not JSON: the SDK reports that). Counting the tools decodes
// each into an empty struct, which keeps nothing.
func checkListPage(result []byte) *jsonrpc.Error {
	if len(result) > MaxListPage {
		return &jsonrpc.Error{Code: codeListTooLarge, Message: fmt.Sprintf("a page of %d bytes, more than %d", len(result), MaxListPage)}
	}
	var page struct {
		Tools []struct{} `json:"tools"`
	}
	if json.Unmarshal(result, &page) == nil && len(page.Tools) > MaxTools {
		return &jsonrpc.Error{Code: codeListTooLarge, Message: fmt.Sprintf("a page of %d tools, more than %d", len(page.Tools), MaxTools)}
	}
	return nil
}

// listTooLarge returns err as ErrListTooLarge when it is the error a
// refused page was answered with (by checkListPage, or by frameReader for
// its size), and err otherwise.
func listTooLarge(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) && (we.Code == codeListTooLarge || we.Code == codeResultTooLarge) {
		return fmt.Errorf("%w: %s", ErrListTooLarge, we.Message)
	}
	return err
}

// listGuard is a stdio server's connection with each page of its tool
// list checked before the SDK decodes it: a page checkListPage refuses is
// handed on as an error answer instead.
type listGuard struct {
	mcp.Connection

	mu      sync.Mutex
	pending map[jsonrpc.ID]struct{} // tools/list requests written, not yet answered
}

func guardLists(c mcp.Connection) *listGuard {
	return &listGuard{Connection: c, pending: map[jsonrpc.ID]struct{}{}}
}

// lineLimit is the bound of the next message a stdio server sends: a
// page of its tool list while one is asked for, else MaxResultBytes.
func (g *listGuard) lineLimit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) > 0 {
		return MaxListPage
	}
	return MaxResultBytes
}

func (g *listGuard) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/list" && r.ID.IsValid() {
		g.mu.Lock()
		g.pending[r.ID] = struct{}{}
		g.mu.Unlock()
	}
	return g.Connection.Write(ctx, msg)
}

func (g *listGuard) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := g.Connection.Read(ctx)
	r, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok {
		return msg, err
	}
	g.mu.Lock()
	_, listed := g.pending[r.ID]
	delete(g.pending, r.ID)
	g.mu.Unlock()
	if listed && r.Error == nil {
		if e := checkListPage(r.Result); e != nil {
			r.Result, r.Error = nil, e
		}
	}
	return r, nil
}

// checkListResponse checks the answer of an HTTP server to a tools/list
// request (r is the request, before it is sent) as listGuard checks a
// stdio server's. The answer, JSON or an event stream, is read whole
// within MaxListPage (the stream of a POST ends with its answer) and
// replaced by a JSON-RPC error when a page is refused. Other requests and
// answers pass as they are.
func checkListResponse(r *http.Request, resp *http.Response) (*http.Response, error) {
	id, ok := listRequestID(r)
	if !ok || resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxListPage+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var refused *jsonrpc.Error
	if len(body) > MaxListPage {
		refused = &jsonrpc.Error{Code: codeListTooLarge, Message: fmt.Sprintf("an answer of more than %d bytes", MaxListPage)}
	} else {
		refused = checkListAnswer(resp.Header.Get("Content-Type"), body)
	}
	if refused != nil {
		b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: refused})
		if err != nil {
			return nil, err
		}
		body = b
		resp.Header.Set("Content-Type", "application/json")
		resp.Header.Del("Content-Length")
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return resp, nil
}

// listRequestID returns the id of r's JSON-RPC request when it is a
// tools/list call.
func listRequestID(r *http.Request) (jsonrpc.ID, bool) {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return jsonrpc.ID{}, false
	}
	rc, err := r.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	if err != nil || !bytes.Contains(b, []byte(`"tools/list"`)) {
		return jsonrpc.ID{}, false // a call's arguments are not decoded twice
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/list" || !req.ID.IsValid() {
		return jsonrpc.ID{}, false
	}
	return req.ID, true
}

// checkListAnswer checks each result in an HTTP answer: a JSON message,
// or the messages of an event stream's data fields.
func checkListAnswer(contentType string, body []byte) *jsonrpc.Error {
	media, _, _ := mime.ParseMediaType(contentType)
	if media != "text/event-stream" {
		return checkMessage(body)
	}
	var data []byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, MaxListPage+1)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 { // the end of an event
			if e := checkMessage(data); e != nil {
				return e
			}
			data = data[:0]
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	return checkMessage(data)
}

// checkMessage checks the result of one JSON-RPC answer.
func checkMessage(b []byte) *jsonrpc.Error {
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if len(b) == 0 || json.Unmarshal(b, &m) != nil || m.Result == nil {
		return nil
	}
	return checkListPage(m.Result)
}

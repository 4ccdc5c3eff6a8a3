package mcptools

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxResponseBytes bounds one HTTP response of a streamable HTTP server
// other than the answer to a call, whose messages are bounded by
// MaxResultBytes (boundAnswer).
const MaxResponseBytes = 16 << 20

// ErrResponseTooLarge means an HTTP server's response went past
// MaxResponseBytes; the session ends with it.
var ErrResponseTooLarge = errors.New("mcp server's response too large")

// httpClient is the client of streamable HTTP servers: the default one,
// with every response body bounded. The SDK reads a JSON response whole
// into memory, so a server answering with a gigabyte grew the agent by far
// more than that.
var httpClient = &http.Client{Transport: boundedTransport{base: http.DefaultTransport, max: MaxResponseBytes}}

// boundedTransport bounds the body of every response of base to max bytes.
type boundedTransport struct {
	base http.RoundTripper
	max  int64
}

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if _, list := listRequestID(r); !list && r.Method == http.MethodPost && resp.StatusCode == http.StatusOK {
		return boundAnswer(r, resp), nil
	}
	resp.Body = &boundedBody{body: resp.Body, left: t.max, max: t.max}
	return checkListResponse(r, resp)
}

// boundAnswer bounds each message of the answer to a request other than
// tools/list as a stdio server's are bounded (frameReader): those of an
// event stream line by line, a JSON answer whole. A message past
// MaxResultBytes is not kept; an answer past it is replaced by an error
// answer saying its size. Messages, not the stream, are bounded: the
// stream of a POST ends with its answer. A JSON answer that is not a
// JSON-RPC message is replaced by an error answer to the request (the SDK
// would end the session), as a stdio server's line is (frameReader).
func boundAnswer(r *http.Request, resp *http.Response) *http.Response {
	limit := func() int { return MaxResultBytes }
	var f *frameReader
	if media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); media == "text/event-stream" {
		f = newFrameReader(resp.Body, limit, "data:")
	} else {
		f = newFrameReader(resp.Body, limit, "")
		f.whole, f.messages = true, true
		f.answers, f.hasAnswers = requestID(r)
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{f, resp.Body}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp
}

// boundedBody fails a read once more than max bytes have come.
type boundedBody struct {
	body      io.ReadCloser
	left, max int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, b.max)
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

// requestID picks the id of the request r sends out of its body, without
// decoding its arguments.
func requestID(r *http.Request) (jsonrpc.ID, bool) {
	if r.GetBody == nil {
		return jsonrpc.ID{}, false
	}
	rc, err := r.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	defer rc.Close()
	var scan topScanner
	if _, err := io.Copy(scanWriter{&scan}, io.LimitReader(rc, MaxResultBytes)); err != nil {
		return jsonrpc.ID{}, false
	}
	scan.method = false // a request's: its answer's id is the same
	return scan.answerID()
}

// scanWriter feeds what is written to a topScanner.
type scanWriter struct{ s *topScanner }

func (w scanWriter) Write(b []byte) (int, error) {
	w.s.feed(b)
	return len(b), nil
}

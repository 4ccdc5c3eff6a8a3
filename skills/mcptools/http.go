package mcptools

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxResponseBytes bounds one HTTP response of a streamable HTTP server, as
// the SDK's line limit bounds one message of a stdio server.
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
	resp.Body = &boundedBody{body: resp.Body, left: t.max, max: t.max}
	return checkListResponse(r, resp)
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

package libsqlhttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// dispatch hands a request carrying guardHeader to its guard and any other
// to next.
type dispatch struct{ next http.RoundTripper }

func (d dispatch) RoundTrip(req *http.Request) (*http.Response, error) {
	id := req.Header.Get(guardHeader)
	if id == "" {
		return d.next.RoundTrip(req)
	}
	g := lookup(id)
	if g == nil {
		return nil, fmt.Errorf("libsql guard %q unknown", id)
	}
	return g.roundTrip(req, d.next)
}

// guard is what one connector's requests must keep to: the server it was
// opened for, and its limits. It is comparable, to be registered once.
type guard struct {
	scheme string // http or https
	host   string // host[:port] of the configured URL
	lim    Limits
}

func (g *guard) roundTrip(req *http.Request, next http.RoundTripper) (*http.Response, error) {
	// The library sends later requests of a stream wherever an answer's
	// base_url points; the token must not follow it elsewhere.
	if req.URL.Scheme != g.scheme || !strings.EqualFold(req.URL.Host, g.host) {
		return nil, fmt.Errorf("%w: %s://%s, configured %s://%s", ErrForeignServer, req.URL.Scheme, req.URL.Host, g.scheme, g.host)
	}
	// The library closes streams with no deadline at all: this bounds
	// those requests too.
	ctx, cancel := context.WithTimeout(req.Context(), g.lim.RequestTimeout)
	out := req.Clone(ctx)
	out.Header.Del(guardHeader)
	resp, err := next.RoundTrip(out)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("%w: status %d, location %q", ErrRedirect, resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp.ContentLength > g.lim.MaxAnswerBytes {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d read", ErrAnswerTooLarge, resp.ContentLength, g.lim.MaxAnswerBytes)
	}
	resp.Body = &boundedBody{
		rc: resp.Body, left: g.lim.MaxAnswerBytes, max: g.lim.MaxAnswerBytes,
		maxValues: g.lim.MaxAnswerValues, valuesLeft: g.lim.MaxAnswerValues, cancel: cancel,
	}
	return resp, nil
}

// bytesPerValue is how many bytes of MaxAnswerBytes allow one JSON value
// in an answer by default, and minValues the fewest values the default
// allows (the node's own reads of 2000 records need about 130,000). The
// client library decodes each value (a row, a cell, an element or member
// of anything) into a struct, a slice, a map entry or an interface of its
// own, twice: "{}," costs about 650 bytes allocated and 200 held, so that
// tiny values within the byte bound cost the node more than a GB
// (docs/SECURITY.md). A genuine cell takes at most 3 values
// (ValuesForRows), in about 30 bytes or more.
const (
	bytesPerValue = 64
	minValues     = 1 << 18
)

// boundedBody fails a read past max bytes or past maxValues JSON values,
// and ends the request's deadline when closed.
type boundedBody struct {
	rc     io.ReadCloser
	left   int64 // bytes still allowed
	max    int64
	cancel context.CancelFunc

	// The answer is counted as it is read, before the library decodes
	// it: each ',' '[' and '{' outside a string. A container of k values
	// has k-1 commas and its own opening, so the count is at least the
	// number of values below the top level.
	maxValues  int64
	valuesLeft int64
	inString   bool // within a JSON string
	escaped    bool // after a backslash within it
}

// count counts the values that start in p, the next bytes of the answer,
// and fails when there are too many.
func (b *boundedBody) count(p []byte) error {
	n := int64(0)
	for _, c := range p {
		switch {
		case b.escaped:
			b.escaped = false
		case b.inString:
			switch c {
			case '\\':
				b.escaped = true
			case '"':
				b.inString = false
			}
		case c == '"':
			b.inString = true
		case c == ',' || c == '[' || c == '{':
			n++
		}
	}
	if b.valuesLeft -= n; b.valuesLeft < 0 {
		return fmt.Errorf("%w: over %d JSON values", ErrAnswerTooLarge, b.maxValues)
	}
	return nil
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly max from a larger one.
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: over %d bytes", ErrAnswerTooLarge, b.max)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if cerr := b.count(p[:n]); cerr != nil {
		return 0, cerr
	}
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

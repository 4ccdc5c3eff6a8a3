// Package httpc holds the HTTP plumbing the provider clients share: posting
// JSON, classifying failures into llm.Error, Retry-After, bounded body reads
// and the idle timeout of a streamed body.
package httpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// MaxBody bounds a non-streamed response body. A completion is a few KiB;
// 16 MiB leaves room for any real answer and stops a runaway server.
const MaxBody = 16 << 20

// ErrIdle is the cause of a streamed read cut by the idle timeout.
var ErrIdle = errors.New("stream idle timeout")

// Call describes one HTTP exchange of a provider.
type Call struct {
	Provider string // for errors: "openai", "anthropic"
	Model    string
	URL      string
	// Header is sent with the call; Exchange adds the Accept header of the
	// answer it reads unless Header has one.
	Header http.Header
	Body   any // marshalled as JSON
	// Client sends the call; nil means http.DefaultClient.
	Client *http.Client
	// Now is the clock for latency and Retry-After dates; nil means
	// time.Now.
	Now func() time.Time
	// AnswerLimit bounds what a streamed answer keeps (Events.Keep), in
	// bytes; 0 means MaxBody.
	AnswerLimit int64
	// StreamLimit bounds the event data of a streamed answer, in bytes; 0
	// means MaxStream.
	StreamLimit int64
}

func (c *Call) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// Errorf builds an *llm.Error of this call.
func (c *Call) Errorf(kind llm.ErrorKind, status int, err error, format string, args ...any) *llm.Error {
	return &llm.Error{Kind: kind, Provider: c.Provider, Model: c.Model, Status: status, Message: fmt.Sprintf(format, args...), Err: err}
}

// Post sends the call. A non-2xx status is returned as *llm.Error with the
// message extracted from the body by errMsg (nil: an excerpt of the body);
// on success the caller owns resp.Body.
func (c *Call) Post(ctx context.Context, errMsg func([]byte) string) (*http.Response, error) {
	body, err := json.Marshal(c.Body)
	if err != nil {
		return nil, c.Errorf(llm.KindBadRequest, 0, err, "encode request")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, c.Errorf(llm.KindBadRequest, 0, err, "build request for %s", c.URL)
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := noRedirects(c.Client).Do(req)
	if err != nil {
		return nil, c.Transport(ctx, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := ""
	if errMsg != nil {
		msg = errMsg(b)
	}
	if msg == "" {
		msg = llm.Excerpt(string(b), llm.MaxErrorExcerpt)
	}
	if resp.StatusCode/100 == 3 {
		msg = fmt.Sprintf("redirect to %q not followed: set base_url to the address that answers", llm.Excerpt(resp.Header.Get("Location"), 200))
	}
	if msg == "" && rerr != nil {
		msg = "reading error body: " + rerr.Error()
	}
	e := c.Errorf(llm.KindForStatus(resp.StatusCode), resp.StatusCode, nil, "%s", llm.Excerpt(msg, llm.MaxErrorExcerpt))
	e.RetryAfter = RetryAfter(resp.Header.Get("Retry-After"), c.now())
	return nil, e
}

// noRedirects returns a copy of client (nil: http.DefaultClient) that hands
// back a redirect instead of following it. A redirect would send the
// conversation, and headers such as Anthropic's x-api-key that net/http
// keeps across hosts, to wherever the server points; an API never needs
// one, so Post turns it into an error that names the target.
func noRedirects(client *http.Client) *http.Client {
	if client == nil {
		client = http.DefaultClient
	}
	cl := *client
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cl
}

// Transport classifies an error of the exchange (no status): the caller's
// context first, then network timeouts, else a network failure.
func (c *Call) Transport(ctx context.Context, err error) *llm.Error {
	switch {
	case errors.Is(err, ErrIdle):
		return c.Errorf(llm.KindTimeout, 0, err, "the server sent nothing for the idle timeout")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return c.Errorf(llm.KindTimeout, 0, ctx.Err(), "no complete answer before the deadline")
	case errors.Is(ctx.Err(), context.Canceled):
		return c.Errorf(llm.KindCanceled, 0, ctx.Err(), "request cancelled")
	}
	kind := llm.KindOf(err)
	if kind == llm.KindInternal || kind == llm.KindCanceled {
		kind = llm.KindNetwork
	}
	// err (a *url.Error) already names the method and URL.
	return &llm.Error{Kind: kind, Provider: c.Provider, Model: c.Model, Err: err}
}

// ReadAll reads a non-streamed body of at most MaxBody bytes.
func (c *Call) ReadAll(ctx context.Context, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		return nil, c.Transport(ctx, err)
	}
	if len(b) > MaxBody {
		return nil, c.Errorf(llm.KindMalformed, 200, nil, "response body larger than %d bytes", MaxBody)
	}
	return b, nil
}

// MaxRetryAfter is the longest Retry-After taken from a server (about 11.6
// days); a longer one counts as this long.
const MaxRetryAfter = 1e6 * time.Second

// RetryAfter parses a Retry-After header: delay seconds or an HTTP date
// (relative to now), at most MaxRetryAfter. Absent, malformed or past
// values give 0.
func RetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(h, 64); err == nil {
		if !(secs > 0) { // also NaN
			return 0
		}
		return time.Duration(min(secs, MaxRetryAfter.Seconds()) * float64(time.Second))
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return 0
	}
	if d := t.Sub(now); d > 0 {
		return min(d, MaxRetryAfter)
	}
	return 0
}

// IdleBody wraps a streamed body so that a gap of more than idle between
// reads, counted from the first byte, cancels the exchange (through
// cancel) and later reads fail with ErrIdle; after Tail, only Tail
// re-arms it. The wait for the first byte is not bounded here: servers
// send their headers at different moments (llama.cpp's server when the
// prompt's evaluation starts, others with the first token), and the time
// to the first token (a model load, a long prompt on a Raspberry Pi) is
// the call's timeout's to bound, whatever the server. Close stops the
// timer.
type IdleBody struct {
	r      io.ReadCloser
	idle   time.Duration
	timer  *time.Timer
	mu     sync.Mutex // guards fired
	fired  bool
	cancel context.CancelFunc
	tail   bool // set by Tail: reads no longer re-arm the timer
}

// FinishGrace is how long a stream whose answer is complete may go on
// without an event (see Events.Finishing) before it counts as ended; half
// the idle timeout is taken instead when it is shorter.
const FinishGrace = 5 * time.Second

// Tail (re)arms the timer for FinishGrace (or half of idle, when shorter), and
// from now on bytes read no longer re-arm it: only another Tail does.
// A reader that holds a complete answer calls it at each event, so that
// a server which neither ends the stream nor sends events, heartbeats or
// not, costs the grace and not the idle timeout or the call's timeout.
func (b *IdleBody) Tail() {
	d := FinishGrace
	if b.idle > 0 {
		d = min(d, b.idle/2)
	}
	b.tail = true
	if b.timer == nil {
		b.timer = time.AfterFunc(d, b.fire)
		return
	}
	b.timer.Reset(d)
}

// NewIdleBody wraps r; its idle timer starts at the first byte read.
// idle <= 0 disables it.
func NewIdleBody(r io.ReadCloser, idle time.Duration, cancel context.CancelFunc) *IdleBody {
	return &IdleBody{r: r, idle: idle, cancel: cancel}
}

func (b *IdleBody) fire() {
	b.mu.Lock()
	b.fired = true
	b.mu.Unlock()
	b.cancel()
}

// Fired reports whether the idle timeout cut the stream.
func (b *IdleBody) Fired() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fired
}

// Untail undoes Tail: bytes read re-arm the idle timer again, and it is
// armed for idle now (or stopped when idle is off).
func (b *IdleBody) Untail() {
	b.tail = false
	if b.timer == nil {
		return
	}
	if b.idle > 0 {
		b.timer.Reset(b.idle)
	} else {
		b.timer.Stop()
	}
}

// Read reads and (re-)arms the idle timer on data (until Tail). Read and
// Tail are called from one goroutine.
func (b *IdleBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.Fired() {
		return n, ErrIdle
	}
	switch {
	case n == 0 || b.tail || b.idle <= 0:
	case b.timer == nil:
		b.timer = time.AfterFunc(b.idle, b.fire)
	default:
		b.timer.Reset(b.idle)
	}
	return n, err
}

// Close stops the timer and closes the body.
func (b *IdleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.r.Close()
}

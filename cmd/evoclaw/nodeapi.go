package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// Environment variables of the node API's clients (chat, status).
const (
	envNode  = "EVOCLAW_NODE"  // the node's base URL, as --node
	envToken = "EVOCLAW_TOKEN" // the bearer token itself
	// envHTTPToken is the token variable `logs --node` reads; accepted too.
	envHTTPToken = "EVOCLAW_HTTP_TOKEN"
)

// Bounds of a node API client.
const (
	// nodeDialTimeout bounds connecting to the node.
	nodeDialTimeout = 5 * time.Second
	// maxErrorBody bounds the error body read from a node.
	maxErrorBody = 64 << 10
)

// Bounds on a node that answers nothing; variables for tests.
var (
	// nodeHeaderTimeout bounds the wait for an answer's status and
	// headers: a node answers every request of these clients at once,
	// a streamed chat within 15 s (orchestrator.DefaultSSEKeepAlive), a
	// long poll of `logs --follow` within its 30 s. One that accepted the
	// connection and sends nothing is stuck (or stopped), and a client
	// waiting on it would hang.
	nodeHeaderTimeout = time.Minute
	// nodeStreamSilence bounds the silence of a streamed chat: the node
	// writes a keep-alive at least every 15 s.
	nodeStreamSilence = time.Minute
)

// errNoNode is returned when no node could be found or reached.
var errNoNode = errors.New("no evoclaw node")

// nodeFlags find a node's API: its address and bearer token come from the
// data directory of `evoclaw serve`, unless given.
type nodeFlags struct {
	dataDir   string
	node      string
	tokenFile string
	config    configFlag
	fs        *flag.FlagSet
}

// register adds --data-dir, --config, --node and --token-file to fs.
func (f *nodeFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	f.config.register(fs)
	fs.StringVar(&f.dataDir, "data-dir", orchestrator.DefaultDataDir, "the node's data directory (holds its API address and token)")
	fs.StringVar(&f.node, "node", "", "the node's API base URL, e.g. http://127.0.0.1:8787 (default: from --data-dir, or $"+envNode+")")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the API bearer token (default: $"+envToken+", or the one in --data-dir)")
}

// parseSubcommand parses args with the flag set f was registered on,
// wants a subcommand first (usage names them) and resolves the node's
// client.
func (f *nodeFlags) parseSubcommand(args []string, usage string) (pos []string, client *nodeClient, err error) {
	if pos, err = parseFlags(f.fs, args); err != nil {
		return nil, nil, err
	}
	if len(pos) == 0 {
		return nil, nil, fmt.Errorf("%w: %s", errUsage, usage)
	}
	client, err = f.client()
	return pos, client, err
}

// client resolves the node's address and token.
func (f *nodeFlags) client() (*nodeClient, error) {
	if f.fs != nil {
		if err := f.config.apply(f.fs, &f.dataDir, nil); err != nil {
			return nil, err
		}
	}
	base := f.node
	if base == "" {
		base = os.Getenv(envNode)
	}
	if base == "" {
		path := filepath.Join(f.dataDir, orchestrator.HTTPAddrFile)
		b, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				if nodeRunsIn(f.dataDir) {
					return nil, fmt.Errorf("%w: %s", errNoNode, apiOff(f.dataDir))
				}
				return nil, fmt.Errorf("%w: no API address in %s: start `evoclaw serve --data-dir %s`, or pass --data-dir DIR or --node URL", errNoNode, path, f.dataDir)
			}
			return nil, fmt.Errorf("read node address: %w", err)
		}
		base = strings.TrimSpace(string(b))
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: node address %q: want http://host:port", errUsage, base)
	}
	token, tokenFrom, err := f.token()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: nodeDialTimeout}).DialContext
	tr.ResponseHeaderTimeout = nodeHeaderTimeout
	c := &nodeClient{base: strings.TrimRight(base, "/"), token: token, tokenFrom: tokenFrom, http: &http.Client{Transport: tr}}
	if f.node == "" && os.Getenv(envNode) == "" {
		c.dataDir = f.dataDir // the address came from there
	}
	return c, nil
}

// nodeRunsIn reports whether a node (serve, or an edge agent) runs in the
// data directory dir: it holds the flock of the audit database there
// while it runs (persistence/sqlite), which the kernel drops when it ends.
// The probe holds the lock for no longer than the call.
func nodeRunsIn(dir string) bool {
	db, err := os.Open(filepath.Join(dir, orchestrator.AuditFile))
	if err != nil {
		return false
	}
	defer db.Close() // drops the probe's lock, if it took it
	return errors.Is(flockNB(db), syscall.EWOULDBLOCK)
}

// apiOff says what to do about a node that runs in dir but serves no API
// there.
func apiOff(dir string) string {
	return fmt.Sprintf("a node runs in %s, but with its API off (or it is an edge agent, which has none): "+
		"set [http] listen in the node's evoclaw.toml, e.g. listen = \"127.0.0.1:8787\" (docs/CONFIG.md), and restart it; "+
		"or pass --data-dir DIR or --node URL of a node with its API on", dir)
}

// token finds the bearer token: --token-file, the environment, the data
// directory, in that order. from says where it came from, in the words of
// an error about a token the node refused.
func (f *nodeFlags) token() (token, from string, err error) {
	path := f.tokenFile
	from = "--token-file " + path
	if path == "" {
		for _, env := range []string{envToken, envHTTPToken} {
			if t := strings.TrimSpace(os.Getenv(env)); t != "" {
				return t, "$" + env + " (unset it to use the token in --data-dir)", nil
			}
		}
		path = filepath.Join(f.dataDir, orchestrator.HTTPTokenFile)
		from = path + ": is --data-dir the node's?"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("%w: no API token in %s: pass the node's --data-dir, --token-file FILE or set $%s", errNoNode, path, envToken)
		}
		return "", "", fmt.Errorf("read API token: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", "", fmt.Errorf("%w: the token file %s is empty", errNoNode, path)
	}
	return t, from, nil
}

// nodeClient calls one node's API.
type nodeClient struct {
	base  string // without a trailing slash
	token string
	// tokenFrom says where token came from (apiError.TokenFrom).
	tokenFrom string
	http      *http.Client
	// dataDir is the data directory base was read from; empty when
	// base was given (--node, $EVOCLAW_NODE).
	dataDir string
}

// do sends a request with the token. A non-2xx answer is an *apiError and
// its body is closed; a node that cannot be reached is errNoNode.
func (c *nodeClient) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer from the node at %s in time: %w", c.base, ctx.Err())
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isHeaderTimeout(err) {
			return nil, fmt.Errorf("the node at %s took the request but sent no answer in %v: is it stuck or stopped? (%w)",
				c.base, nodeHeaderTimeout, errNoAnswerInTime)
		}
		if isUnreachable(err) {
			if c.dataDir != "" && nodeRunsIn(c.dataDir) {
				// the address is left from a run with the API on
				return nil, fmt.Errorf("%w answers at %s (from %s): %s", errNoNode, c.base,
					filepath.Join(c.dataDir, orchestrator.HTTPAddrFile), apiOff(c.dataDir))
			}
			return nil, fmt.Errorf("%w answers at %s: start `evoclaw serve`, or pass --data-dir DIR or --node URL (%v)", errNoNode, c.base, unwrapNet(err))
		}
		return nil, fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		e := readAPIError(resp)
		e.TokenFrom = c.tokenFrom
		return nil, e
	}
	return resp, nil
}

// errNoAnswerInTime: a node that took a request answered nothing for
// nodeHeaderTimeout, or went silent in a stream for nodeStreamSilence.
var errNoAnswerInTime = errors.New("no answer in time")

// isHeaderTimeout reports the transport's error for an answer whose
// headers did not come within ResponseHeaderTimeout.
func isHeaderTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && strings.Contains(err.Error(), "awaiting response headers")
}

// silenceBound closes body when nothing arrives for d, so that a read
// waiting on a node gone silent ends; its reads then fail with
// errNoAnswerInTime. Stop releases its timer.
type silenceBound struct {
	body   io.ReadCloser
	d      time.Duration
	t      *time.Timer
	silent atomic.Bool
}

func newSilenceBound(body io.ReadCloser, d time.Duration) *silenceBound {
	s := &silenceBound{body: body, d: d}
	s.t = time.AfterFunc(d, func() {
		s.silent.Store(true)
		_ = body.Close()
	})
	return s
}

func (s *silenceBound) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		s.t.Reset(s.d)
	}
	if err != nil && s.silent.Load() {
		return n, fmt.Errorf("the node sent nothing for %v, though it keeps a stream alive every 15 s: %w", s.d, errNoAnswerInTime)
	}
	return n, err
}

// Stop ends the bound; the body stays open.
func (s *silenceBound) Stop() { s.t.Stop() }

// isUnreachable reports errors that mean nothing listens at the address.
func isUnreachable(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &op) && op.Op == "dial"
}

// unwrapNet shortens a dial error to its cause ("connection refused").
func unwrapNet(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

// apiError is an error answer of the node: its HTTP status, error type,
// message and code (from {"error": {"message", "type", "code"}}, or
// {"error": "message"} from older nodes).
type apiError struct {
	Status  int
	Type    string
	Message string
	// Code is the body's error code ("" for none), such as
	// orchestrator.CodeModelNotConfigured.
	Code string
	// TokenFrom says where the client's token came from, for a 401:
	// "--token-file FILE", "$EVOCLAW_TOKEN ...", "DIR/http-token: ...";
	// empty when not known.
	TokenFrom string
	// RetryAfter is the answer's Retry-After (0: none, or not seconds).
	RetryAfter time.Duration
}

// maxRetryAfter bounds a Retry-After taken from a node: a day.
const maxRetryAfter = 24 * time.Hour

// retryAfterOf is a Retry-After header's wait in whole seconds, at most
// maxRetryAfter; 0 for none, an HTTP date, or anything else.
func retryAfterOf(h string) time.Duration {
	n, err := strconv.ParseUint(strings.TrimSpace(h), 10, 32)
	if err != nil {
		return 0
	}
	return min(time.Duration(n)*time.Second, maxRetryAfter)
}

// Error says what went wrong in terms of what the user can do about it.
func (e *apiError) Error() string {
	if e.Code == orchestrator.CodeModelNotConfigured {
		// The message says what is wrong and what to do, and names the
		// tools on offer: longer than other errors, and not "not ready".
		return termLine(e.Message, 1200)
	}
	msg := termLine(e.Message, 300)
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	switch e.Status {
	case http.StatusUnauthorized:
		if e.TokenFrom != "" {
			return "wrong token, from " + e.TokenFrom + " (" + msg + ")"
		}
		return "wrong token: is --data-dir the node's? (" + msg + ")"
	case http.StatusBadRequest:
		return "the node refused the request: " + msg
	case http.StatusNotFound:
		if strings.HasPrefix(e.Message, "no endpoint") {
			return "the node has no such endpoint (is it an older evoclaw?): " + msg
		}
		return "not found: " + msg // an unknown job, approval, conversation ...
	case http.StatusConflict:
		return "conflict: " + msg
	case http.StatusTooManyRequests:
		if e.RetryAfter > time.Minute {
			// the chat input budget: a wait of minutes or hours, which
			// "shortly" would hide
			return "the node is busy, try again in " + short(e.RetryAfter) + " (its Retry-After): " + msg
		}
		return "the node is busy, try again shortly: " + msg
	case http.StatusBadGateway:
		return "the LLM failed: " + msg
	case http.StatusServiceUnavailable:
		return "the node is not ready: " + msg
	case http.StatusGatewayTimeout:
		return "no answer in time: " + msg
	}
	return fmt.Sprintf("the node answered %d %s: %s", e.Status, http.StatusText(e.Status), msg)
}

// isNoModel reports a chat refused because the node has no language model:
// every other chat would be refused the same way.
func isNoModel(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == orchestrator.CodeModelNotConfigured
}

// errorBody is the error a node sends, in either of its shapes.
type errorBody struct {
	Error  json.RawMessage `json:"error"`
	Status int             `json:"status"`
}

// apiErrorFrom decodes an error body; status is the HTTP status when the
// body carries none.
func apiErrorFrom(b []byte, status int) *apiError {
	e := &apiError{Status: status}
	var body errorBody
	if json.Unmarshal(b, &body) != nil || len(body.Error) == 0 {
		e.Message = strings.TrimSpace(string(b))
		return e
	}
	if body.Status != 0 {
		e.Status = body.Status
	}
	var obj struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
	}
	if json.Unmarshal(body.Error, &e.Message) != nil && json.Unmarshal(body.Error, &obj) == nil {
		e.Message, e.Type = obj.Message, obj.Type
		if obj.Code != nil {
			e.Code = *obj.Code
		}
	}
	return e
}

func readAPIError(resp *http.Response) *apiError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)) // a cut body still says something
	e := apiErrorFrom(b, resp.StatusCode)
	e.RetryAfter = retryAfterOf(resp.Header.Get("Retry-After"))
	return e
}

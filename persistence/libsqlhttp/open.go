package libsqlhttp

import (
	"cmp"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/tursodatabase/libsql-client-go/libsql"
)

// Defaults for the zero fields of Limits.
const (
	// DefaultMaxAnswerBytes bounds one answer's body. The node holds up
	// to about four times this while the library decodes it.
	DefaultMaxAnswerBytes = 32 << 20
	// DefaultRequestTimeout bounds one request, the library's own
	// background ones (closing a stream) included.
	DefaultRequestTimeout = 30 * time.Second
)

// Sentinel errors of the guard.
var (
	// ErrAnswerTooLarge reports an answer over Limits.MaxAnswerBytes.
	ErrAnswerTooLarge = errors.New("libSQL server answer too large")
	// ErrRedirect reports an answer that redirects elsewhere; it is not
	// followed, so the auth token and the statements stay where they were.
	ErrRedirect = errors.New("libSQL server answered with a redirect, not followed")
	// ErrForeignServer reports a request to another server than the one
	// configured: an answer's base_url (sqld's --http-self-url) named it.
	// It is not sent.
	ErrForeignServer = errors.New("libSQL request to another server than the configured one refused")
	// ErrMalformedAnswer reports an answer the client library could not
	// make sense of (it would have crashed the process).
	ErrMalformedAnswer = errors.New("malformed libSQL server answer")
)

// Limits bounds what one libSQL server may cost. The zero value is ready
// for use.
type Limits struct {
	// MaxAnswerBytes is the largest answer body read. Zero means
	// DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// MaxAnswerValues bounds the JSON values of one answer (rows, cells
	// and whatever is nested in them), which cost the node far more than
	// their bytes while the library decodes them; see [ValuesForRows].
	// Zero means one per 64 bytes of MaxAnswerBytes, and at least 262,144
	// (a query of 20,000 rows of 4 columns).
	MaxAnswerValues int64
	// RequestTimeout bounds one request from its start to the end of its
	// answer. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// ValuesForRows is the MaxAnswerValues a query of rows rows of cols
// columns needs: a row and each of its cells take 3 values at most, and
// so does its header of column names and types.
func ValuesForRows(rows, cols int64) int64 { return (rows+1)*(3*cols+1) + 64 }

func (l Limits) withDefaults() Limits {
	l.MaxAnswerBytes = cmp.Or(l.MaxAnswerBytes, DefaultMaxAnswerBytes)
	l.MaxAnswerValues = cmp.Or(l.MaxAnswerValues, max(l.MaxAnswerBytes/bytesPerValue, minValues))
	l.RequestTimeout = cmp.Or(l.RequestTimeout, DefaultRequestTimeout)
	return l
}

// Open returns a connector to the libSQL server at rawURL (libsql://,
// https:// or http://), sending token (empty: none) as a bearer token,
// whose every request goes through the guard described in the package
// documentation. It does not contact the server.
func Open(rawURL, token string, lim Limits) (driver.Connector, error) {
	if lim.MaxAnswerBytes < 0 || lim.MaxAnswerValues < 0 || lim.RequestTimeout < 0 {
		return nil, fmt.Errorf("libsql limits must not be negative")
	}
	lim = lim.withDefaults()
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	wire := u.Scheme
	switch wire {
	case "libsql", "https":
		wire = "https" // the library speaks TLS to libsql:// unless told not to
	case "http":
	default:
		return nil, fmt.Errorf("url scheme %q, want libsql, https or http", u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("url %q names no host", rawURL)
	}
	id := register(guard{scheme: wire, host: u.Host, lim: lim})
	opts := []libsql.Option{libsql.WithRequestHeaders(map[string]string{guardHeader: id})}
	if token != "" {
		opts = append(opts, libsql.WithAuthToken(token))
	}
	c, err := libsql.NewConnector(rawURL, opts...)
	if err != nil {
		return nil, err
	}
	return &connector{inner: c}, nil
}

// guardHeader carries, on each request of a connector from Open, the id
// of its guard. The guard removes it before the request leaves.
const guardHeader = "X-Evoclaw-Libsql-Guard"

var (
	guardsMu sync.Mutex // guards guards and guardIDs
	guards   = map[string]*guard{}
	guardIDs = map[guard]string{}
)

// register returns the id of g, adding it when new. Connectors to the
// same server with the same limits share one, so the number of guards
// stays that of distinct configurations.
func register(g guard) string {
	guardsMu.Lock()
	defer guardsMu.Unlock()
	if id, ok := guardIDs[g]; ok {
		return id
	}
	id := strconv.Itoa(len(guards) + 1)
	guards[id], guardIDs[g] = &g, id
	return id
}

// lookup returns the guard of id, nil when there is none.
func lookup(id string) *guard {
	guardsMu.Lock()
	defer guardsMu.Unlock()
	return guards[id]
}

// The client library sends every request through http.DefaultClient and
// offers no way to give it another client, so the guards sit in its
// transport. Requests without guardHeader (every other user of
// http.DefaultClient) go to http.DefaultTransport as they did; this runs
// before main, so that no request is in flight while the field changes.
func init() {
	http.DefaultClient.Transport = dispatch{next: http.DefaultTransport}
}

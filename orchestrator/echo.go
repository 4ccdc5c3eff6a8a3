package orchestrator

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What an error message repeats of the request: a value of the path (an
// id) or of the query longer than maxEcho bytes is shown as its first
// echoPrefix bytes and its length. A 404 for an approval id of 3,000
// bytes answered 3,109 bytes repeating it whole, and so did every job
// endpoint; a client, a proxy or a log that keeps error bodies kept the
// request again with each one.
const (
	maxEcho    = 64
	echoPrefix = 32
)

// echo is s as an error message may show it: whole when at most maxEcho
// bytes, else its first echoPrefix bytes (whole characters) and its size.
func echo(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := echoPrefix
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:cut], len(s))
}

// echoed is msg, written about request r, with each value of r's path
// wildcards and query (names too) that is longer than maxEcho replaced,
// where msg repeats it as it is or quoted (%q), by echo of it: errors
// made below the API (a store's "no such job \"ID\"") name what they
// were given.
func echoed(r *http.Request, msg string) string {
	if r == nil || len(msg) <= maxEcho {
		return msg
	}
	for _, v := range requestValues(r) {
		if len(v) <= maxEcho {
			continue
		}
		short := echo(v)
		q := strconv.Quote(v)
		msg = strings.ReplaceAll(msg, q, strconv.Quote(short))
		msg = strings.ReplaceAll(msg, q[1:len(q)-1], short) // quoted within something quoted again
		msg = strings.ReplaceAll(msg, v, short)
	}
	return msg
}

// requestValues are the values of r's path wildcards (by the pattern that
// matched it) and its query's names and values.
func requestValues(r *http.Request) []string {
	var out []string
	for rest := r.Pattern; ; {
		_, after, ok := strings.Cut(rest, "{")
		if !ok {
			break
		}
		name, tail, ok := strings.Cut(after, "}")
		if !ok {
			break
		}
		if v := r.PathValue(strings.TrimSuffix(name, "...")); v != "" {
			out = append(out, v)
		}
		rest = tail
	}
	for k, vs := range r.URL.Query() {
		out = append(out, k)
		out = append(out, vs...)
	}
	return out
}

// echoError answers code with err's message as echoed bounds it.
func echoError(w http.ResponseWriter, r *http.Request, code int, err error) {
	httpError(w, code, echoed(r, err.Error()))
}

package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
)

// ErrorKind is a stable name for what went wrong with a completion. It is
// recorded in the audit trail, so values never change meaning.
type ErrorKind string

// Error kinds.
const (
	// KindTimeout: the per-call timeout, the stream idle timeout or the
	// caller's deadline passed.
	KindTimeout ErrorKind = "timeout"
	// KindCanceled: the caller cancelled the request.
	KindCanceled ErrorKind = "canceled"
	// KindRateLimited: HTTP 429 (or Anthropic's 529 overloaded).
	KindRateLimited ErrorKind = "rate_limited"
	// KindAuth: HTTP 401 or 403; the API key is missing or wrong.
	KindAuth ErrorKind = "auth"
	// KindBadRequest: any other 4xx; the request itself is wrong (unknown
	// model, context too long, bad tool schema).
	KindBadRequest ErrorKind = "bad_request"
	// KindServer: HTTP 5xx.
	KindServer ErrorKind = "server"
	// KindNetwork: the connection failed or broke before a full answer.
	KindNetwork ErrorKind = "network"
	// KindMalformed: the server answered 2xx with something that is not a
	// completion (not JSON, no choices, nothing in the message).
	KindMalformed ErrorKind = "malformed_response"
	// KindOverloaded: too many calls were already waiting for this
	// provider's concurrency slots; nothing was sent.
	KindOverloaded ErrorKind = "overloaded"
	// KindNotConfigured: there is no language model to ask (a node with
	// no [llm]); nothing was sent, and asking again will not help.
	KindNotConfigured ErrorKind = "not_configured"
	// KindInternal: anything else (a bug or an unexpected error).
	KindInternal ErrorKind = "internal"
)

// Error is a failed completion. Every provider in this module returns its
// errors as *Error (possibly wrapped), so callers can use errors.As.
type Error struct {
	Kind     ErrorKind
	Provider string // "openai", "anthropic"
	Model    string // the model asked for
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Message is the provider's error message, or an excerpt of the body
	// when it had none (at most MaxErrorExcerpt bytes).
	Message string
	// RetryAfter is the server's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

// MaxErrorExcerpt bounds the body excerpt kept in Error.Message.
const MaxErrorExcerpt = 512

// Error describes the failure: provider, model, kind, status and message.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm %s", e.Provider)
	if e.Model != "" {
		fmt.Fprintf(&b, " model %q", e.Model)
	}
	fmt.Fprintf(&b, ": %s", e.Kind)
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.Kind == KindNetwork && nobodyThere(e.Err) {
		b.WriteString(" (nothing answers at that address: is the model server running, and is [llm] base_url right?)")
	}
	return b.String()
}

// nobodyThere reports whether err says that the server's address has no
// server: the connection was refused, or the host name is not known.
func nobodyThere(err error) bool {
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dns) && dns.IsNotFound
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the same call may succeed if sent again:
// rate limits, server errors and network failures.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindRateLimited, KindServer, KindNetwork:
		return true
	}
	// 408 Request Timeout invites a retry by its meaning.
	return e.Status == 408
}

// KindOf names the kind of err: the Kind of an *Error in its chain, else
// timeout or canceled for context errors, network for net errors, else
// internal. It returns "" for a nil error.
func KindOf(err error) ErrorKind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	if errors.Is(err, context.Canceled) {
		return KindCanceled
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return KindTimeout
		}
		return KindNetwork
	}
	return KindInternal
}

// KindForStatus maps an HTTP status of a failed call to its kind.
func KindForStatus(status int) ErrorKind {
	switch {
	case status == 429 || status == 529:
		// 529 is Anthropic's "overloaded": back off like a rate limit.
		return KindRateLimited
	case status == 408:
		return KindTimeout
	case status == 401 || status == 403:
		return KindAuth
	case status == 409:
		// A conflict is transient by HTTP's meaning; retry it like a 5xx.
		return KindServer
	case status >= 500:
		return KindServer
	case status >= 400:
		return KindBadRequest
	}
	return KindMalformed
}

// Excerpt cuts s to at most n bytes on a rune boundary, marking the cut.
func Excerpt(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " \t\r\n") + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

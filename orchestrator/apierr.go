package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// API error types: the "type" of an error body. Clients may switch on them;
// they never change meaning.
const (
	ErrTypeInvalidRequest = "invalid_request_error" // 400: the request is wrong
	ErrTypeAuth           = "authentication_error"  // 401: missing or wrong token
	ErrTypeNotFound       = "not_found_error"       // 404: unknown model or path
	ErrTypeConflict       = "conflict_error"        // 409: the request clashes with stored state
	ErrTypeBusy           = "rate_limit_error"      // 429: too much work queued; retry later
	ErrTypeUpstream       = "upstream_error"        // 502: the LLM failed or misbehaved
	ErrTypeNotReady       = "not_ready_error"       // 503: the node cannot serve this now (audit, broker)
	ErrTypeTimeout        = "timeout_error"         // 504: no answer in time
	ErrTypeInternal       = "internal_error"        // 500: a bug
	ErrTypeCanceled       = "canceled"              // the client went away
	ErrTypeNodeLost       = "node_lost_error"       // 503: the cluster node running the chat died
)

// Error codes: the "code" of an error body, for a cause a client can test
// (a code never changes meaning). OpenAI's own, such as model_not_found
// and invalid_api_key, are used where they fit.
const (
	// CodeInvalidAPIKey: a missing or wrong bearer token (401), OpenAI's
	// code for a refused API key.
	CodeInvalidAPIKey = "invalid_api_key"
	// CodeModelNotConfigured: the node has no language model configured
	// ([llm] in its config file), so it refuses every chat: HTTP 503,
	// type not_ready_error, with X-Should-Retry: false (the official
	// OpenAI clients would retry a 503 otherwise; the same request fails
	// the same way until the node is configured and restarted).
	CodeModelNotConfigured = "model_not_configured"
)

// ErrNodeStopping ends the chats of the HTTP API still running when the
// node stops: the cause of their requests' contexts then (httpAPI.close),
// so that they fail as the node's doing (503), not as if their clients
// had gone away.
var ErrNodeStopping = errors.New("the node is stopping")

// stoppingErr returns err, a chat's failure, as ErrNodeStopping when it is
// a cancellation and ctx was ended by the node stopping.
func stoppingErr(ctx context.Context, err error) error {
	if err == nil || !errors.Is(context.Cause(ctx), ErrNodeStopping) || errors.Is(err, ErrNodeStopping) {
		return err
	}
	var le *llm.Error
	if errors.Is(err, context.Canceled) || errors.Is(err, actors.ErrCanceled) || errors.As(err, &le) && le.Kind == llm.KindCanceled {
		return fmt.Errorf("%w: the chat was not finished (retry once it is back): %w", ErrNodeStopping, err)
	}
	return err
}

// statusClientClosed is logged (never seen) for a chat its client abandoned.
const statusClientClosed = 499

// APIError is the error body of every endpoint, in the shape OpenAI's API
// and clients use: {"error": {"message", "type", "param", "code"}}.
type APIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// errorBody wraps an APIError as it goes on the wire.
type errorBody struct {
	Error APIError `json:"error"`
}

// writeAPIError answers with status and an OpenAI-shaped error body.
func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	if status == http.StatusTooManyRequests {
		// Busy now (a full queue): clients such as OpenAI's retry after it.
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, errorBody{Error: APIError{Message: msg, Type: typ}})
}

// storeRetryAfter is the Retry-After, in seconds, of a 503 for a store
// that cannot write: time for a disk to be freed or a queue to drain.
const storeRetryAfter = 5

// storeUnavailable answers 503, with Retry-After, when err says the
// node's database cannot take the request now (sqlite.Unavailable: a
// full disk, a read-only or broken file, a closed store, a full write
// queue), naming storage as the cause; it reports whether it answered.
// Nothing of the request was stored: it was refused as a whole, and the
// same request may succeed later. Such a failure answered 500, as if the
// node had a bug.
func storeUnavailable(w http.ResponseWriter, err error) bool {
	if !sqlite.Unavailable(err) {
		return false
	}
	why := "the database file cannot be written (read-only, missing or damaged, or an I/O error)"
	switch {
	case errors.Is(err, sqlite.ErrDiskFull):
		why = "its disk is full"
	case errors.Is(err, sqlite.ErrReadOnlyFS):
		why = "its file system is read-only, as the kernel makes a card after write errors (see dmesg), until it is checked (fsck) and mounted again"
	case errors.Is(err, sqlite.ErrClosed):
		why = "the store is closed (the node is stopping)"
	case errors.Is(err, sqlite.ErrQueueFull):
		why = "its write queue is full"
	}
	w.Header().Set("Retry-After", strconv.Itoa(storeRetryAfter))
	writeAPIError(w, http.StatusServiceUnavailable, ErrTypeNotReady,
		"storage unavailable: the node's database cannot take this request now: "+why+"; nothing of it was stored, retry later")
	return true
}

// errorTypeFor is the error type of a status that no finer cause names.
func errorTypeFor(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return ErrTypeInvalidRequest
	case http.StatusUnauthorized:
		return ErrTypeAuth
	case http.StatusNotFound:
		return ErrTypeNotFound
	case http.StatusConflict:
		return ErrTypeConflict
	case http.StatusTooManyRequests:
		return ErrTypeBusy
	case http.StatusBadGateway:
		return ErrTypeUpstream
	case http.StatusServiceUnavailable:
		return ErrTypeNotReady
	case http.StatusGatewayTimeout:
		return ErrTypeTimeout
	}
	return ErrTypeInternal
}

// apiErrorf builds an APIError, naming the request field at fault when
// param is not "".
func apiErrorf(typ, param, format string, args ...any) APIError {
	e := APIError{Type: typ, Message: fmt.Sprintf(format, args...)}
	if param != "" {
		e.Param = &param
	}
	return e
}

// chatErrorStatus maps why a chat failed to the HTTP status and error type
// that say so. Everything that is not the client's fault and not a known
// condition is a 500.
func chatErrorStatus(err error) (int, string) {
	var le *llm.Error
	var re *RemoteChatError
	switch {
	case err == nil:
		return http.StatusOK, ""
	case errors.Is(err, ErrNodeLost):
		return http.StatusServiceUnavailable, ErrTypeNodeLost
	case errors.Is(err, ErrNodeStopping):
		return http.StatusServiceUnavailable, ErrTypeNotReady
	case errors.As(err, &re) && re.Status >= 400 && re.Status <= 599 && re.Type != "":
		// the node that ran the chat mapped it already
		return re.Status, re.Type
	case errors.Is(err, ErrConversationID):
		return http.StatusBadRequest, ErrTypeInvalidRequest
	case errors.Is(err, ErrNotReady):
		return http.StatusServiceUnavailable, ErrTypeNotReady
	case errors.Is(err, actors.ErrSeeded):
		return http.StatusConflict, ErrTypeConflict
	case errors.Is(err, actors.ErrBusy), errors.Is(err, ErrTooManyChats):
		return http.StatusTooManyRequests, ErrTypeBusy
	case errors.Is(err, actors.ErrAskTimeout):
		return http.StatusGatewayTimeout, ErrTypeTimeout
	case errors.Is(err, actors.ErrAudit), errors.Is(err, actors.ErrHistory), errors.Is(err, actors.ErrStopped):
		return http.StatusServiceUnavailable, ErrTypeNotReady
	case errors.Is(err, actors.ErrCanceled):
		return statusClientClosed, ErrTypeCanceled
	case errors.Is(err, actors.ErrMaxIterations), errors.Is(err, actors.ErrToolErrorLimit),
		errors.Is(err, actors.ErrRepeatedToolCall), errors.Is(err, actors.ErrChatTooLarge):
		// on_limit = "error": the model did not reach an answer.
		return http.StatusBadGateway, ErrTypeUpstream
	case errors.As(err, &le):
		switch le.Kind {
		case llm.KindTimeout:
			return http.StatusGatewayTimeout, ErrTypeTimeout
		case llm.KindOverloaded:
			// nothing was sent: this node's own queue for the model is full
			return http.StatusTooManyRequests, ErrTypeBusy
		case llm.KindCanceled:
			return statusClientClosed, ErrTypeCanceled
		case llm.KindNotConfigured:
			// not the client's fault and not a model's failure: the node
			// has none to ask
			return http.StatusServiceUnavailable, ErrTypeNotReady
		}
		return http.StatusBadGateway, ErrTypeUpstream
	case errors.Is(err, context.Canceled):
		// the caller went away (while the chat waited for a slot)
		return statusClientClosed, ErrTypeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		// the chat's deadline ended the LLM call before the node gave up
		return http.StatusGatewayTimeout, ErrTypeTimeout
	case errors.Is(err, actors.ErrLLM):
		return http.StatusBadGateway, ErrTypeUpstream
	}
	return http.StatusInternalServerError, ErrTypeInternal
}

// chatErrorCode is the code of a failed chat's error body (see
// CodeModelNotConfigured), nil when its cause has none.
func chatErrorCode(err error) *string {
	var re *RemoteChatError
	if errors.As(err, &re) && re.Code != "" {
		code := re.Code
		return &code
	}
	if llm.KindOf(err) == llm.KindNotConfigured {
		code := CodeModelNotConfigured
		return &code
	}
	return nil
}

// noRetry marks an error answer that the same request will meet again
// (CodeModelNotConfigured): X-Should-Retry: false, which the official
// OpenAI clients obey instead of retrying a 5xx.
func noRetry(w http.ResponseWriter, e APIError) {
	if e.Code != nil && *e.Code == CodeModelNotConfigured {
		w.Header().Set("X-Should-Retry", "false")
	}
}

package orchestrator

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/boundlog"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// ConversationHeader names the conversation a chat continues (request) or
// was answered in (response), on both chat endpoints. A request may name
// it here or in the body's conversation_id, or both if they agree; the
// response carries it only when it is a valid id.
const ConversationHeader = "X-Evoclaw-Conversation"

// Events of a streamed POST /v1/chat, in order: one EventConversation, any
// number of EventProgress, then EventAnswer or EventError, then the end.
const (
	EventConversation = "conversation"
	EventProgress     = "progress"
	EventAnswer       = "answer"
	EventError        = "error"
)

// ChatRequest is the body of POST /v1/chat.
type ChatRequest struct {
	// ConversationID names the conversation to continue or start; empty
	// starts a new one with an id the server chooses.
	ConversationID string `json:"conversation_id,omitempty"`
	Text           string `json:"text"`
	// Stream answers with server-sent events (as does Accept:
	// text/event-stream).
	Stream bool `json:"stream,omitempty"`
	// Sampling hints, those of POST /v1/chat/completions: temperature,
	// top_p, frequency_penalty, presence_penalty and seed.
	llm.Sampling
}

// ChatResponse is the answer to POST /v1/chat (and the data of its
// streamed EventAnswer).
type ChatResponse struct {
	ConversationID string `json:"conversation_id"`
	Text           string `json:"text"`
	// Limit names the loop limit that ended tool use early; empty when the
	// model answered on its own.
	Limit      string               `json:"limit,omitempty"`
	Iterations int                  `json:"iterations"`
	ToolCalls  int                  `json:"tool_calls"`
	Calls      []actors.CallSummary `json:"calls"`
}

// ChatFailure is the body of a failed POST /v1/chat (and the data of its
// streamed EventError): the error, and what the chat did before it failed.
type ChatFailure struct {
	Error APIError `json:"error"`
	// Status is the HTTP status the failure maps to (also in a stream,
	// whose own status was 200).
	Status         int                  `json:"status"`
	ConversationID string               `json:"conversation_id,omitempty"`
	Iterations     int                  `json:"iterations"`
	ToolCalls      int                  `json:"tool_calls"`
	Calls          []actors.CallSummary `json:"calls"`
}

// decodeChatRequest parses a POST /v1/chat body: unknown fields and
// trailing data are refused, text is required.
func decodeChatRequest(body []byte) (ChatRequest, error) {
	var req ChatRequest
	if err := decodeStrict(body, &req, `{"conversation_id": optional, "text": ..., "stream": optional, sampling hints (temperature, top_p, ...): optional}`); err != nil {
		return req, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return req, &fieldError{param: "text", msg: "text: required"}
	}
	if e := checkSampling(req.Sampling); e != nil {
		return req, &fieldError{param: *e.Param, msg: e.Message}
	}
	return req, nil
}

// fieldError is a refused request body that names the field at fault
// (the param of the error body); param is "" for the body as a whole.
type fieldError struct {
	param, msg string
}

func (e *fieldError) Error() string { return e.msg }

// errParam is the field an error names (see fieldError), else "".
func errParam(err error) string {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe.param
	}
	return ""
}

// decodeStrict decodes body, one JSON object, into v, refusing unknown
// fields (a key spelled other than as documented too), keys given twice
// (checkKeys) and trailing data. A body that does not decode is a *fieldError
// that names shape, the body the endpoint wants, what is wrong (the JSON
// type a field wants, the byte offset of a syntax error) and the field.
func decodeStrict(body []byte, v any, shape string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg, param := jsonDecodeProblem(err)
		return &fieldError{param: param, msg: fmt.Sprintf("body: want %s: %s", shape, msg)}
	}
	if dec.More() {
		return errors.New("body: trailing data after the JSON object")
	}
	if err := checkKeys(body, v); err != nil {
		return &fieldError{param: errParam(err), msg: fmt.Sprintf("body: want %s: %s", shape, err)}
	}
	return nil
}

// readBody reads at most limit bytes of r's body, answering 413 itself
// when it is longer; ok is false when it answered.
//
// A body that announces more than limit (Content-Length) is answered 413
// at once, and the connection closed, without keeping a byte of it. A
// client that sent "Expect: 100-continue" (curl does, past 1 MiB) is
// answered before it sends one. For one that sends its body whole before
// it reads the answer (most clients: Go's, Node's, Python's), what comes
// of a body up to maxDrainBytes over the limit is then read and dropped
// before the close: closed at once, its upload found the connection reset
// and it never saw the 413 (an SDK then retries a "connection error"). A
// body that does not arrive within the server's bound (httpLimits.Body) is
// 408; one that gets no share of the bodies' budget (reserveBody) is 429;
// one that is not UTF-8 is 400.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	if r.ContentLength > limit {
		msg := fmt.Sprintf("body larger than %d bytes (Content-Length %d)", limit, r.ContentLength)
		if r.ContentLength-limit > maxDrainBytes || strings.EqualFold(r.Header.Get("Expect"), "100-continue") || !dropRest(w, r, msg) {
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusRequestEntityTooLarge, msg)
		}
		return nil, false
	}
	if !reserveBody(w, r, limit) {
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", limit))
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Said as it is: the message was the connection's "read tcp
			// A->B: i/o timeout", answered 400 as if the body were wrong.
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusRequestTimeout, fmt.Sprintf("the body did not arrive in time (%d of its bytes came)", len(body)))
		default:
			httpError(w, http.StatusBadRequest, "read body: "+err.Error())
		}
		return nil, false
	}
	if !utf8.Valid(body) {
		// encoding/json turns each bad byte into U+FFFD without a word: a
		// Latin-1 "café" was answered, stored and audited as "caf\ufffd".
		writeAPIError(w, http.StatusBadRequest, ErrTypeInvalidRequest,
			fmt.Sprintf("body: not valid UTF-8 (at byte %d): JSON text must be UTF-8 (RFC 8259)", invalidUTF8At(body)))
		return nil, false
	}
	return body, true
}

// maxDrainBytes is how far past its endpoint's limit a body is still read
// and dropped after its 413 (dropRest), and drainTime how long that may
// take.
const (
	maxDrainBytes = 16 << 20
	drainTime     = 30 * time.Second
)

// dropRest answers a body too large with 413 msg and takes the connection
// over from the server: the answer goes out whole and the node's side of
// the connection ends at once (a client that waits for them sees both),
// then what comes of the body is read and dropped, up to its
// Content-Length, the client's close or drainTime, before the close.
// Closed with the body unread (as the server closes a connection it
// answered early), the connection was reset under a client still
// uploading, which then never saw its answer. It reports false when the
// connection cannot be taken over (HTTP/2): nothing was written then.
func dropRest(w http.ResponseWriter, r *http.Request, msg string) bool {
	body, err := json.Marshal(errorBody{Error: APIError{Message: msg, Type: ErrTypeInvalidRequest}})
	if err != nil {
		return false
	}
	h := w.Header().Clone() // what the node's guards set for every answer
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(drainTime))
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("Connection", "close")
	fmt.Fprintf(rw, "HTTP/1.1 %d %s\r\n", http.StatusRequestEntityTooLarge, http.StatusText(http.StatusRequestEntityTooLarge))
	_ = h.Write(rw)
	fmt.Fprintf(rw, "\r\n%s\n", body)
	if rw.Flush() != nil {
		return true
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, rw, r.ContentLength)
	return true
}

// invalidUTF8At is the offset of the first byte of b that is not valid
// UTF-8, len(b) when all are.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// wantsEventStream reports whether the client asked for server-sent events
// in its Accept header.
func wantsEventStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// newConversationID makes a fresh conversation id: prefix, "-", 24 hex
// digits (well within wire.MaxAgentIDLen).
func newConversationID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return prefix + "-" + hex.EncodeToString(b)
}

// requestConversation is the conversation a chat request names: the
// ConversationHeader or the body's conversation_id (both: they must
// agree), "" when neither. A refused one wraps ErrConversationID, id is
// the client's as sent (for the log only) and param is the field to
// blame: conversation_id when the body named it, else none.
func requestConversation(r *http.Request, body string) (id, param string, err error) {
	header := r.Header.Get(ConversationHeader)
	for _, v := range r.Header.Values(ConversationHeader) {
		if v != header {
			// Which one the client meant is a guess: the first was taken
			// and the others ignored without a word.
			return header, "", fmt.Errorf("%w: header %s given more than once, naming different conversations (%s and %s)",
				ErrConversationID, ConversationHeader, strconv.Quote(echo(header)), strconv.Quote(echo(v)))
		}
	}
	switch {
	case header != "" && body != "" && header != body:
		return body, "conversation_id", fmt.Errorf("%w: conversation_id %s and header %s %s name different conversations",
			ErrConversationID, strconv.Quote(echo(body)), ConversationHeader, strconv.Quote(echo(header)))
	case body != "":
		id, param = body, "conversation_id"
	default:
		id = header
	}
	if id != "" && wire.ValidateAgentID(id) != nil {
		return id, param, fmt.Errorf("%w %.60q: use letters, digits, '-' and '_', at most %d characters",
			ErrConversationID, id, wire.MaxAgentIDLen)
	}
	return id, "", nil
}

func (n *Node) handleChat(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, maxChatBody)
	if !ok {
		return
	}
	req, err := decodeChatRequest(body)
	bodyDecoded(r) // the chat holds what it decoded, not the body's share
	if err != nil {
		writeAPIErrorParam(w, http.StatusBadRequest, errParam(err), err.Error())
		return
	}
	id, param, err := requestConversation(r, req.ConversationID)
	if err != nil {
		// Refused before the header is set: it echoes valid ids only.
		n.logChatFailure(id, http.StatusBadRequest, err)
		code, f := chatFailure("", nil, err)
		f.Error = apiErrorf(f.Error.Type, param, "%s", err.Error())
		writeChatFailure(w, code, f, err)
		return
	}
	req.ConversationID = id
	fresh := req.ConversationID == ""
	if fresh {
		req.ConversationID = newConversationID("chat")
	}
	w.Header().Set(ConversationHeader, req.ConversationID)
	in := ChatInput{ConversationID: req.ConversationID, Text: req.Text, Sampling: req.Sampling, fresh: fresh,
		Client: chatClient(r, n.cfg.NodeID)}
	if !req.Stream && !wantsEventStream(r) {
		ans, err := n.Converse(r.Context(), in)
		if err != nil {
			code, f := chatFailure(failedConversation(w, req.ConversationID, fresh, err), ans, err)
			n.logChatFailure(req.ConversationID, code, err)
			noRepeat(w, ans, err)
			writeChatFailure(w, code, f, err)
			return
		}
		writeJSON(w, http.StatusOK, chatResponse(ans))
		return
	}
	if err := n.auditGate(); err != nil {
		// Refused before the stream starts, so the status says so.
		err = notStarted{err}
		code, f := chatFailure(failedConversation(w, req.ConversationID, fresh, err), nil, err)
		writeChatFailure(w, code, f, err)
		return
	}
	sw := newSSEWriter(w)
	// Held, as the chat's first steps are (see streamChat): a chat refused
	// at once answers with its status, not a stream.
	sw.held = true
	sw.event(EventConversation, map[string]string{"conversation_id": req.ConversationID})
	// A streamed chat is read live: its questions can be answered.
	in.Person = true
	ans, err := n.streamChat(r.Context(), in, sw, chatStream{
		progress: func(p actors.Progress) { sw.event(EventProgress, p) },
		dropped:  func(d DroppedNote) { sw.event(EventProgress, d) },
	})
	if err != nil {
		code, f := chatFailure(req.ConversationID, ans, err)
		n.logChatFailure(req.ConversationID, code, err)
		if !sw.started {
			f.ConversationID = failedConversation(w, req.ConversationID, fresh, err)
			noRepeat(w, ans, err)
			writeChatFailure(w, code, f, err)
			return
		}
		sw.event(EventError, f)
		return
	}
	sw.event(EventAnswer, chatResponse(ans))
}

// mayHaveActed reports whether a failed chat may have run tool calls: its
// answer counts some, or there is no answer of a chat that started (a
// timeout, a node stopping), so what ran is not known. Run again, the chat
// runs them again.
func mayHaveActed(ans *actors.Answer, err error) bool {
	if ans != nil {
		return ans.ToolCalls > 0
	}
	return !refusedBeforeStart(err)
}

// noRepeat marks the answer of a failed chat that may have run tool calls
// (mayHaveActed) X-Should-Retry: false. The official OpenAI clients retry
// a 5xx twice by default, which ran the chat, and its tool calls on the
// fleet, three times; with the header they do not, and a chat refused
// before it ran (busy, not ready) or whose model failed before any call
// is still retried.
func noRepeat(w http.ResponseWriter, ans *actors.Answer, err error) {
	if mayHaveActed(ans, err) {
		w.Header().Set("X-Should-Retry", "false")
	}
}

// writeChatFailure answers a chat that failed with err with code and f;
// a 429 carries Retry-After, as every busy answer of the API does (more
// than 1 s when the chat's input waits for room: retryAfterSeconds), and
// a refusal that a retry meets again X-Should-Retry: false (noRetry).
func writeChatFailure(w http.ResponseWriter, code int, f ChatFailure, err error) {
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", retryAfterSeconds(err))
	}
	noRetry(w, f.Error)
	writeJSON(w, code, f)
}

func chatResponse(ans *actors.Answer) ChatResponse {
	resp := ChatResponse{ConversationID: ans.ConversationID, Text: ans.Text, Limit: ans.Limit, Iterations: ans.Iterations,
		ToolCalls: ans.ToolCalls, Calls: ans.Calls}
	if resp.Calls == nil {
		resp.Calls = []actors.CallSummary{}
	}
	return resp
}

// chatFailure maps a failed chat to its status and body; ans may be nil.
func chatFailure(convID string, ans *actors.Answer, err error) (int, ChatFailure) {
	code, typ := chatErrorStatus(err)
	f := ChatFailure{Error: chatAPIError(typ, chatErrParam(err), convID, err), Status: code, ConversationID: convID,
		Calls: []actors.CallSummary{}}
	if ans != nil {
		f.Iterations, f.ToolCalls = ans.Iterations, ans.ToolCalls
		if ans.Calls != nil {
			f.Calls = ans.Calls
		}
	}
	return code, f
}

// failedConversation is the conversation a failed chat's answer names:
// none (and no ConversationHeader on w) when the node made the id for the
// chat and refused it before it started, as no conversation was made;
// else id.
func failedConversation(w http.ResponseWriter, id string, fresh bool, err error) string {
	if fresh && refusedBeforeStart(err) {
		w.Header().Del(ConversationHeader)
		return ""
	}
	return id
}

// chatErrParam is the request field a failed chat blames: the
// conversation id when it is not one, else none.
func chatErrParam(err error) string {
	if errors.Is(err, ErrConversationID) {
		return "conversation_id"
	}
	return ""
}

// logChatFailure logs a chat that did not answer, at a level by its cause.
// convID may be the client's and invalid: it is cut (logCut), as is err.
func (n *Node) logChatFailure(convID string, code int, err error) {
	conv, msg := logCut(convID, maxLoggedID), logCut(err.Error(), maxLoggedErr)
	switch {
	case code == statusClientClosed:
		n.log.Info("chat abandoned by its client", "conversation", conv, "status", code)
	case llm.KindOf(err) == llm.KindNotConfigured:
		// the node said so at start (a warning), and the client is told
		// at length: one short line per chat
		n.log.Info("chat refused: no language model configured ([llm], docs/LLM.md)", "conversation", conv, "status", code)
	case code == http.StatusServiceUnavailable && errors.Is(err, ErrNotReady) && refusedBeforeStart(err) && n.notReadyLog != nil:
		if suppressed, ok := n.notReadyLog.Allow(n.now()); ok {
			n.log.Warn("chat failed", "conversation", conv, "status", code, "err", msg, "suppressed", suppressed)
		}
	case code >= 500:
		n.log.Warn("chat failed", "conversation", conv, "status", code, "err", msg)
	case code == http.StatusTooManyRequests && n.busyLog != nil:
		if suppressed, ok := n.busyLog.Allow(n.now()); ok {
			n.log.Info("chat refused", "conversation", conv, "status", code, "err", msg, "suppressed", suppressed)
		}
	default:
		n.log.Info("chat refused", "conversation", conv, "status", code, "err", msg)
	}
}

// At most busyLogBurst chats refused busy (429) are logged per
// busyLogWindow; the next line logged counts the others ("suppressed").
// A client that retried at once, in a loop, was refused 2,000 times a
// second, and each refusal logged a line. The same bound, in a window of
// its own, holds for chats refused before they start because the node is
// not ready (503, ErrNotReady: the audit trail cannot write, or no node of
// the cluster can take the conversation): on a full disk, 3,000 such
// refusals in 0.3 s logged 3,000 lines (700 KB), to a journal that is
// often on the same card.
const (
	busyLogBurst  = 20
	busyLogWindow = 10 * time.Second
)

// What a log line keeps of client input (logCut): a conversation id (a
// valid one is at most 48 bytes), an error's message.
const (
	maxLoggedID  = 64
	maxLoggedErr = 4 << 10
)

// logCut is client input as a log line carries it: whole when it has at
// most keep bytes, else cut as edge/boundlog cuts (its first keep bytes
// and its length) and a short hash, so that a 4 MB conversation id makes
// a short line and two long ones can still be told apart.
func logCut(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s sha256:%x", boundlog.Cut(s, keep), sum[:6])
}

// chatAPIError is the error body of a failed chat: type typ, field param
// (none when ""), chatErrorMessage and chatErrorCode.
func chatAPIError(typ, param, convID string, err error) APIError {
	e := apiErrorf(typ, param, "%s", chatErrorMessage(convID, err))
	e.Code = chatErrorCode(err)
	return e
}

// chatErrorMessage is the message of a failed chat's error body: for a
// node with no model, the message of its error alone. A history
// write that ended at its deadline may still commit (the store keeps it
// queued): the message says so, and names the conversation to look in
// before a retry repeats the request.
func chatErrorMessage(convID string, err error) string {
	var le *llm.Error
	if errors.As(err, &le) && le.Kind == llm.KindNotConfigured {
		// its message says it all, in the client's terms
		return le.Message
	}
	msg := err.Error()
	if errors.Is(err, actors.ErrHistory) && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		msg += fmt.Sprintf(" (the history write may still complete: conversation %s, also in the %s header, may hold this request and its answer; read GET /v1/conversations/%s/messages before retrying)",
			convID, ConversationHeader, convID)
	}
	return msg
}

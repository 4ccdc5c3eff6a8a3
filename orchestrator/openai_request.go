package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// ModelEvoclaw is the model name of the OpenAI-compatible API: the node's
// whole agent system, its tool loop over the fleet. It is the only one; the
// configured LLM's own model names are not accepted (the node is not a
// pass-through to its model).
const ModelEvoclaw = "evoclaw"

// codeModelNotFound is the error code of an unknown model, OpenAI's: its
// clients and proxies (fallback to another model) look for it.
var codeModelNotFound = "model_not_found"

// maxCompletionBody bounds a /v1/chat/completions request body: a
// stateless client sends the whole exchange every time.
const maxCompletionBody = 4 << 20

// maxCompletionMessages bounds the messages of one request. A stateless
// request's earlier messages are stored as the history of a fresh
// conversation, each one a row of the audit trail (a few hundred bytes
// and tens of microseconds even when it holds one character), in one
// write bounded by the audit timeout (10 s): 2048 is far more than a
// chat client sends (Open WebUI sends the whole conversation, hundreds
// of messages), and is stored in about 0.1 s here, so within a second or
// two on a Raspberry Pi. The body bound (maxCompletionBody) bounds the
// bytes.
const maxCompletionMessages = 2048

// completionRequest is the body of POST /v1/chat/completions as decoded:
// the fields evoclaw honours or must refuse. Any other field is ignored.
type completionRequest struct {
	Model         string              `json:"model"`
	Messages      []completionMessage `json:"messages"`
	Stream        bool                `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Stop json.RawMessage `json:"stop"`
	// Sampling hints: checked as OpenAI checks them (checkSampling), then
	// sent with every model call of the chat.
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	FrequencyPenalty    *float64          `json:"frequency_penalty"`
	PresencePenalty     *float64          `json:"presence_penalty"`
	Seed                *int64            `json:"seed"`
	User                *string           `json:"user"`
	Store               *bool             `json:"store"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	Metadata            map[string]string `json:"metadata"`
	LogitBias           map[string]int    `json:"logit_bias"`
	WebSearchOptions    json.RawMessage   `json:"web_search_options"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	N                   *int              `json:"n"`
	Tools               json.RawMessage   `json:"tools"`
	Functions           json.RawMessage   `json:"functions"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	FunctionCall        json.RawMessage   `json:"function_call"`
	ResponseFormat      json.RawMessage   `json:"response_format"`
	Logprobs            *bool             `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	Modalities          []string          `json:"modalities"`
	Audio               json.RawMessage   `json:"audio"`
	// ConversationID (an evoclaw extension) continues a stored conversation.
	ConversationID string `json:"conversation_id"`
}

// completionMessage is one entry of messages.
type completionMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
	// Refusal is an assistant message's refusal, which OpenAI's answers
	// give instead of content: a client replays it as it got it.
	Refusal *string `json:"refusal"`
}

// completionInput is a valid request, ready for Converse.
type completionInput struct {
	Model        string
	Stream       bool
	IncludeUsage bool
	// ConversationID is the body's conversation_id ("" when absent).
	ConversationID string
	// System joins the system and developer messages ("" when none).
	System string
	// Seed is every user and assistant message before the last one.
	Seed []llm.Message
	// Text is the last message, a user message.
	Text      string
	MaxTokens int
	// Stop are the stop sequences (at most maxStopSequences, none
	// empty): the answer ends before the first of them.
	Stop []string
	// NoTools: tool_choice "none", the chat offers the model no tools.
	NoTools bool
	// Sampling are the request's sampling hints, within OpenAI's ranges.
	Sampling llm.Sampling
}

// requestError is a refused request: its status and error body.
type requestError struct {
	Status int
	APIError
}

func (e *requestError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *requestError {
	return &requestError{Status: http.StatusBadRequest, APIError: apiErrorf(ErrTypeInvalidRequest, param, format, args...)}
}

// decodeChatCompletionRequest parses and checks a chat completions body.
// Every refusal names the field at fault.
func decodeChatCompletionRequest(body []byte) (completionInput, *requestError) {
	if e := refuseLongArrays(body); e != nil {
		return completionInput{}, e
	}
	var req completionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		_, param := jsonDecodeProblem(err)
		msg := jsonProblem(err)
		if p := messageParam(body, param); p != param {
			// name the message in the text as in param
			msg, param = strings.Replace(msg, param, p, 1), p
		}
		return completionInput{}, badRequest(param, "%s", msg)
	}
	in := completionInput{Model: req.Model, Stream: req.Stream, ConversationID: req.ConversationID}
	if req.StreamOptions != nil {
		in.IncludeUsage = req.StreamOptions.IncludeUsage
	}
	switch {
	case req.Model == "":
		return in, badRequest("model", "model: required; this node serves %q", ModelEvoclaw)
	case req.Model != ModelEvoclaw:
		e := apiErrorf(ErrTypeNotFound, "model", "model %.80q not found: this node serves %q (its agent system); see GET /v1/models", req.Model, ModelEvoclaw)
		e.Code = &codeModelNotFound
		return in, &requestError{Status: http.StatusNotFound, APIError: e}
	}
	if e := refuseUnsupported(&req); e != nil {
		return in, e
	}
	in.Sampling = llm.Sampling{Temperature: req.Temperature, TopP: req.TopP,
		FrequencyPenalty: req.FrequencyPenalty, PresencePenalty: req.PresencePenalty, Seed: req.Seed}
	if e := checkSampling(in.Sampling); e != nil {
		return in, e
	}
	in.NoTools = toolChoiceNone(req.ToolChoice)
	stop, e := stopSequences(req.Stop)
	if e != nil {
		return in, e
	}
	in.Stop = stop
	for _, mt := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 {
			return in, badRequest(mt.name, "%s: want a positive number, got %d", mt.name, *mt.v)
		}
		in.MaxTokens = *mt.v // max_completion_tokens, the newer name, wins when both are set
	}
	if len(req.Messages) == 0 {
		return in, badRequest("messages", "messages: at least one message is required, the last one from the user")
	}
	if len(req.Messages) > maxCompletionMessages { // refuseLongArrays refused it before it was decoded
		return in, badRequest("messages", "messages: more than %d messages in one request", maxCompletionMessages)
	}
	var system []string
	for i, m := range req.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		text, e := contentText(m.Content, where, m.Role == llm.RoleAssistant)
		if e != nil {
			return in, e
		}
		if m.Role == llm.RoleAssistant && text == "" && m.Refusal != nil {
			text = *m.Refusal
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case llm.RoleUser:
			in.Seed = append(in.Seed, llm.Message{Role: llm.RoleUser, Content: text})
		case llm.RoleAssistant:
			if field := clientCalls(m); field != "" {
				return in, badRequest(where+"."+field, "%s.%s: assistant tool calls from the client are not supported: evoclaw runs its own tools and keeps their calls in its stored conversation (continue it with conversation_id)", where, field)
			}
			in.Seed = append(in.Seed, llm.Message{Role: llm.RoleAssistant, Content: text})
		case llm.RoleTool, "function":
			return in, badRequest(where+".role", "%s: %q messages are not supported: evoclaw runs its own tools (client tools cannot be offered to it)", where, m.Role)
		case "":
			return in, badRequest(where+".role", "%s.role: required (system, developer, user or assistant)", where)
		default:
			return in, badRequest(where+".role", "%s.role %.40q: want system, developer, user or assistant", where, m.Role)
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != llm.RoleUser {
		return in, badRequest(fmt.Sprintf("messages[%d].role", len(req.Messages)-1),
			"messages: the last message must be the user's (got %q): it is what the node answers", last.Role)
	}
	in.Text = in.Seed[len(in.Seed)-1].Content
	in.Seed = in.Seed[:len(in.Seed)-1]
	if strings.TrimSpace(in.Text) == "" {
		return in, badRequest(fmt.Sprintf("messages[%d].content", len(req.Messages)-1), "messages: the last user message is empty")
	}
	in.System = strings.Join(system, "\n\n")
	return in, nil
}

// clientCalls names the field of an assistant message that holds tool
// calls the client made (tool_calls, or the legacy function_call), "" when
// it holds none.
func clientCalls(m completionMessage) string {
	switch {
	case !emptyArray(m.ToolCalls):
		return "tool_calls"
	case present(m.FunctionCall):
		return "function_call"
	}
	return ""
}

// maxContentParts bounds the parts of one message's content. Clients send
// a few (text and images); the body bound alone would let one message
// hold 160,000 empty parts.
const maxContentParts = 1024

// refuseLongArrays refuses a body whose messages or stop array is longer
// than its bound before the body is decoded: decoded first, the 140,000
// tiny messages or million stop sequences a 4 MiB body can hold took 60 to
// 70 MB each to be refused. A body that does not decode here is left to
// the decoder, which says what is wrong with it.
func refuseLongArrays(body []byte) *requestError {
	var arrays struct {
		Messages json.RawMessage `json:"messages"`
		Stop     json.RawMessage `json:"stop"`
	}
	if json.Unmarshal(body, &arrays) != nil {
		return nil
	}
	if moreThan(arrays.Messages, maxCompletionMessages) {
		return badRequest("messages", "messages: more than %d messages in one request: start a new chat, or continue a stored conversation (conversation_id) and send only its new message",
			maxCompletionMessages)
	}
	if moreThan(arrays.Stop, maxStopSequences) {
		return badRequest("stop", "stop: more than %d stop sequences: at most %d", maxStopSequences, maxStopSequences)
	}
	return nil
}

// moreThan reports whether raw, valid JSON (as a field the decoder took),
// is an array of more than max elements. It counts the commas between the
// array's own elements, allocating nothing: skipping each element with a
// json.Decoder buffered and copied it, 25 MB for one message of 4 MB.
func moreThan(raw json.RawMessage, max int) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' {
		return false
	}
	// n counts the elements begun; next: one may begin (at the start and
	// after a comma of the array's own).
	depth, n := 0, 0
	inString, escaped, next := false, false, true
	for _, c := range raw[1:] {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == ' ', c == '\t', c == '\n', c == '\r':
			continue
		case depth == 0 && c == ']':
			return false
		case depth == 0 && c == ',':
			next = true
			continue
		}
		if depth == 0 && next {
			if n, next = n+1, false; n > max {
				return true
			}
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
	}
	return false
}

// refuseUnsupported refuses the fields evoclaw cannot honour rather than
// silently answering something else than asked.
func refuseUnsupported(req *completionRequest) *requestError {
	switch {
	case !emptyArray(req.Tools):
		return badRequest("tools", "tools: client tools are not supported: evoclaw answers with its own tools (the fleet's); send no tools")
	case !emptyArray(req.Functions):
		return badRequest("functions", "functions: client functions are not supported: evoclaw answers with its own tools (the fleet's); send no functions")
	case present(req.FunctionCall):
		return badRequest("function_call", "function_call: not supported: send no tools")
	case req.N != nil && *req.N != 1:
		return badRequest("n", "n: only 1 choice is supported, got %d", *req.N)
	case req.Logprobs != nil && *req.Logprobs:
		return badRequest("logprobs", "logprobs: not supported")
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return badRequest("top_logprobs", "top_logprobs: not supported")
	case present(req.Audio):
		return badRequest("audio", "audio: not supported: text only")
	case len(req.LogitBias) > 0:
		return badRequest("logit_bias", "logit_bias: not supported: the node's model may not share OpenAI's token ids; send none or {}")
	case present(req.WebSearchOptions):
		return badRequest("web_search_options", "web_search_options: not supported: evoclaw searches only with its own tools")
	}
	for _, m := range req.Modalities {
		if m != "text" {
			return badRequest("modalities", "modalities: only \"text\" is supported, got %.40q", m)
		}
	}
	if present(req.ToolChoice) {
		// "none" is honoured (the chat offers no tools); "required" and a
		// named function are refused: evoclaw cannot make its model call
		// a tool, and the client's functions are not offered.
		var s string
		if json.Unmarshal(req.ToolChoice, &s) != nil || (s != "auto" && s != "none") {
			return badRequest("tool_choice", "tool_choice: only \"auto\" or \"none\" (or none at all) are supported: evoclaw chooses its own tools")
		}
	}
	if present(req.ResponseFormat) {
		var rf struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(req.ResponseFormat, &rf) != nil || rf.Type != "text" {
			return badRequest("response_format", "response_format: only {\"type\": \"text\"} is supported")
		}
	}
	return nil
}

// checkSampling refuses a sampling hint out of the range OpenAI's API
// accepts: a client that sends temperature 5 has a bug it should hear of.
// Within range the hints go with every model call of the chat; each
// provider sends those its API takes (docs/API.md).
func checkSampling(s llm.Sampling) *requestError {
	for _, h := range []struct {
		name     string
		v        *float64
		min, max float64
	}{
		{"temperature", s.Temperature, 0, 2},
		{"top_p", s.TopP, 0, 1},
		{"frequency_penalty", s.FrequencyPenalty, -2, 2},
		{"presence_penalty", s.PresencePenalty, -2, 2},
	} {
		if h.v != nil && !(*h.v >= h.min && *h.v <= h.max) {
			return badRequest(h.name, "%s: %g is out of range: want %g to %g", h.name, *h.v, h.min, h.max)
		}
	}
	return nil
}

// maxStopSequences bounds stop. OpenAI's API takes 4; clients written for
// other OpenAI-compatible servers (Continue) send their chat template's
// whole list of stop words, a dozen at most, to a server they do not know,
// and llama.cpp or vLLM honour them all. 16 takes those lists; each one
// is looked for once in the answer.
const maxStopSequences = 16

// stopSequences decodes stop: absent or null, a string, or an array of at
// most maxStopSequences strings, none of them empty.
func stopSequences(raw json.RawMessage) ([]string, *requestError) {
	if !present(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, badRequest("stop", "stop: an empty stop sequence would end every answer before it starts")
		}
		return []string{one}, nil
	}
	var seqs []string
	if json.Unmarshal(raw, &seqs) != nil {
		return nil, badRequest("stop", "stop: want a string or an array of at most %d strings", maxStopSequences)
	}
	if len(seqs) > maxStopSequences { // refuseLongArrays refused a longer one before it was decoded
		return nil, badRequest("stop", "stop: more than %d stop sequences: at most %d", maxStopSequences, maxStopSequences)
	}
	for i, q := range seqs {
		if q == "" {
			return nil, badRequest(fmt.Sprintf("stop[%d]", i), "stop[%d]: an empty stop sequence would end every answer before it starts", i)
		}
	}
	return seqs, nil
}

// cutAtStop ends text before the first of the stop sequences it holds,
// reporting whether one was found.
func cutAtStop(text string, stop []string) (string, bool) {
	end := -1
	for _, q := range stop {
		if i := strings.Index(text, q); i >= 0 && (end < 0 || i < end) {
			end = i
		}
	}
	if end < 0 {
		return text, false
	}
	return text[:end], true
}

// contentText is the text of a message's content: a string, null, or an
// array of {"type": "text", "text": ...} parts (joined by newlines). An
// assistant's content may also hold {"type": "refusal", "refusal": ...}
// parts, as OpenAI's API has them: their text is what the model said.
func contentText(raw json.RawMessage, where string, assistant bool) (string, *requestError) {
	if !present(raw) {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badRequest(where+".content", "%s.content: %s", where, jsonProblem(err))
		}
		return s, nil
	}
	var parts []contentPart
	if raw[0] == '[' && moreThan(raw, maxContentParts) {
		return "", badRequest(where+".content", "%s.content: more than %d parts", where, maxContentParts)
	}
	if raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
		return "", partError(raw, where)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		at := fmt.Sprintf("%s.content[%d]", where, j)
		switch p.Type {
		case "text", "input_text":
			if p.Text == nil {
				return "", badRequest(at+".text", "%s.text: required", at)
			}
			texts = append(texts, *p.Text)
		case "refusal":
			if !assistant {
				return "", badRequest(at+".type", "%s: \"refusal\" parts are the assistant's: want \"text\"", at)
			}
			if p.Refusal == nil {
				return "", badRequest(at+".refusal", "%s.refusal: required", at)
			}
			texts = append(texts, *p.Refusal)
		case "image_url", "input_image", "image":
			return "", badRequest(at+".type", "%s: image parts are not supported yet: send text", at)
		case "input_audio", "file", "input_file":
			return "", badRequest(at+".type", "%s: %q parts are not supported: send text", at, p.Type)
		default:
			return "", badRequest(at+".type", "%s.type %.40q: want \"text\"", at, p.Type)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// contentPart is one part of a message's content.
type contentPart struct {
	Type    string  `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// partError refuses content raw that is neither a string nor an array of
// parts, naming the first part that does not decode and its field at
// fault when it is an array ("messages[0].content[1].text: got a JSON
// number, want a string").
func partError(raw json.RawMessage, where string) *requestError {
	var elems []json.RawMessage
	if raw[0] == '[' && json.Unmarshal(raw, &elems) == nil {
		for j, e := range elems {
			var p contentPart
			if err := json.Unmarshal(e, &p); err != nil {
				at := fmt.Sprintf("%s.content[%d]", where, j)
				msg, field := jsonDecodeProblem(err)
				if field != "" {
					at, msg = at+"."+field, strings.TrimPrefix(msg, field+": ")
				}
				return badRequest(at, "%s: %s", at, msg)
			}
		}
	}
	return badRequest(where+".content", "%s.content: want a string or an array of {\"type\": \"text\", \"text\": ...} parts", where)
}

// toolChoiceNone reports whether tool_choice is "none" (refuseUnsupported
// has refused every other value but "auto").
func toolChoiceNone(raw json.RawMessage) bool {
	var s string
	return present(raw) && json.Unmarshal(raw, &s) == nil && s == "none"
}

// emptyArray reports whether a raw field is absent, null or an empty
// array, whatever the white space inside ("[ ]").
func emptyArray(raw json.RawMessage) bool {
	if !present(raw) {
		return true
	}
	var elems []json.RawMessage
	return json.Unmarshal(raw, &elems) == nil && len(elems) == 0
}

// present reports whether a raw field was sent with a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// jsonProblem says what is wrong with a body that did not decode, without
// the decoder's Go type names.
func jsonProblem(err error) string {
	msg, _ := jsonDecodeProblem(err)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "body is " + msg
	}
	if strings.HasPrefix(msg, "got ") {
		return "body: " + msg
	}
	return msg
}

// jsonDecodeProblem says what is wrong with JSON that did not decode (the
// byte offset of a syntax error, the field and the JSON type wanted of a
// type error), and names the field at fault as param ("" when it is the
// whole body). A field inside an array is named without its index (the
// decoder does not say it): see messageParam.
func jsonDecodeProblem(err error) (msg, param string) {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON: %s (at byte %d)", se.Error(), se.Offset), ""
	case errors.As(err, &te):
		// The fields of an embedded llm.Sampling are the body's own.
		te.Field = strings.TrimPrefix(te.Field, "Sampling.")
		if te.Field == "" {
			return fmt.Sprintf("got a JSON %s, want %s", te.Value, jsonKind(te.Type)), ""
		}
		return fmt.Sprintf("%s: got a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type)), te.Field
	case errors.Is(err, io.EOF):
		return "empty body", ""
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "not valid JSON: unexpected end of the body", ""
	}
	// DisallowUnknownFields: `json: unknown field "name"`.
	if q, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name, uerr := strconv.Unquote(q); uerr == nil {
			return fmt.Sprintf("unknown field %.60q", name), name
		}
	}
	return strings.TrimPrefix(err.Error(), "json: "), ""
}

// jsonKind names what a Go type decodes from, the way a JSON user would.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another type"
}

// messageParam adds the index the decoder leaves out of a param inside
// messages ("messages.role" is "messages[2].role"): the first message
// that does not decode on its own is the one at fault.
func messageParam(body []byte, param string) string {
	rest, ok := strings.CutPrefix(param, "messages")
	if !ok || rest != "" && rest[0] != '.' {
		return param
	}
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return param
	}
	for i, raw := range req.Messages {
		var m completionMessage
		if json.Unmarshal(raw, &m) != nil {
			return fmt.Sprintf("messages[%d]%s", i, rest)
		}
	}
	return param
}

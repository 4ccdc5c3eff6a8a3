package orchestrator

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// The OpenAI-compatible face of a node (docs/API.md): GET /v1/models and
// POST /v1/chat/completions, answered by the node's tool loop.

// Finish reasons of a completion.
const (
	finishStop = "stop"
	// finishLength: a loop limit ended tool use and the model answered
	// from what it had ([loop] on_limit = "answer"): the answer is cut
	// short, as a token limit would cut it. Also the model server's own
	// "length": it cut the answer at max_tokens or its context size.
	finishLength = "length"
	// finishFiltered: the model server's content filter cut the answer.
	finishFiltered = "content_filter"
)

// Model is one entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is what GET /v1/models answers.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}

// ChatCompletion is a non-streamed answer of POST /v1/chat/completions.
type ChatCompletion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"` // "chat.completion"
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   CompletionUsage    `json:"usage"`
	// ConversationID (an extension) names the conversation this answer
	// was given and audited in; send it back to continue there.
	ConversationID string `json:"conversation_id"`
}

// CompletionChoice is the one choice of a ChatCompletion.
type CompletionChoice struct {
	Index        int               `json:"index"`
	Message      CompletionMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
}

// CompletionMessage is the assistant's answer.
type CompletionMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// CompletionUsage counts the tokens of every completion the chat needed
// (each tool turn is one), as the provider reported them.
type CompletionUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// CompletionChunk is one event of a streamed answer.
type CompletionChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "chat.completion.chunk"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	// Usage is set on the usage chunk only (stream_options.include_usage).
	Usage          *CompletionUsage `json:"usage,omitempty"`
	ConversationID string           `json:"conversation_id"`
	// Evoclaw (an extension) is set on progress chunks: an
	// actors.Progress, or a DroppedNote. Standard clients ignore it.
	Evoclaw any `json:"evoclaw,omitempty"`
}

// ChunkChoice is the choice of a chunk.
type ChunkChoice struct {
	Index        int        `json:"index"`
	Delta        ChunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

// ChunkDelta is what a chunk adds to the answer.
type ChunkDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

func (n *Node) models() ModelList {
	return ModelList{Object: "list", Data: []Model{{ID: ModelEvoclaw, Object: "model", Created: n.started.Unix(), OwnedBy: "evoclaw"}}}
}

func (n *Node) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, n.models())
}

// handleModel serves GET /v1/models/{model...}.
func (n *Node) handleModel(w http.ResponseWriter, r *http.Request) {
	for _, m := range n.models().Data {
		if m.ID == r.PathValue("model") {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	e := apiErrorf(ErrTypeNotFound, "", "model %s not found: this node serves %q", strconv.Quote(echo(r.PathValue("model"))), ModelEvoclaw)
	e.Code = &codeModelNotFound
	writeJSON(w, http.StatusNotFound, errorBody{Error: e})
}

func (n *Node) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, maxCompletionBody)
	if !ok {
		return
	}
	req, rerr := decodeChatCompletionRequest(body)
	bodyDecoded(r) // the chat holds what it decoded, not the body's share
	if rerr != nil {
		writeJSON(w, rerr.Status, errorBody{Error: rerr.APIError})
		return
	}
	in := ChatInput{Text: req.Text, System: req.System, MaxTokens: req.MaxTokens, Sampling: req.Sampling,
		Client: chatClient(r, n.cfg.NodeID)}
	conv, param, err := requestConversation(r, req.ConversationID)
	if err != nil {
		// Refused before the header is set: it echoes valid ids only.
		n.logChatFailure(conv, http.StatusBadRequest, err)
		writeJSON(w, http.StatusBadRequest, errorBody{Error: apiErrorf(ErrTypeInvalidRequest, param, "%s", err.Error())})
		return
	}
	stateless := conv == ""
	refused := func(error) {}
	if !stateless {
		// Continue a stored conversation: its history stands for the
		// request's earlier messages, which are ignored.
		in.ConversationID = conv
	} else if id, giveBack, ok := n.continued(req); ok {
		// The replayed history is a transcript this node answered: its
		// conversation goes on (stateless.go).
		in.ConversationID = id
		refused = func(err error) {
			if refusedBeforeStart(err) {
				giveBack()
			}
		}
	} else {
		in.ConversationID, in.Seed, in.fresh = newConversationID("oai"), req.Seed, true
	}
	if req.NoTools {
		if n.cluster != nil && !in.fresh {
			// A chat with its own toolbox runs on this node, not on the
			// node that holds the conversation (routable).
			writeJSON(w, http.StatusBadRequest, errorBody{Error: apiErrorf(ErrTypeInvalidRequest, "tool_choice",
				"tool_choice: \"none\" is not supported for a named conversation on a clustered node: send \"auto\" or none")})
			return
		}
		// tool_choice "none": the model is offered no tools, and a call it
		// makes all the same is refused as not found.
		in.Toolbox = actors.Toolboxes{}
	}
	w.Header().Set(ConversationHeader, in.ConversationID)
	id, created := newConversationID("chatcmpl"), n.now().Unix()
	if !req.Stream {
		ans, err := n.Converse(r.Context(), in)
		if err != nil {
			refused(err)
			code, typ := chatErrorStatus(err)
			n.logChatFailure(in.ConversationID, code, err)
			failedConversation(w, in.ConversationID, in.fresh, err)
			noRepeat(w, ans, err)
			writeChatError(w, code, chatAPIError(typ, completionErrParam(req, err), in.ConversationID, err), err)
			return
		}
		text, finish := answerText(ans, req.Stop)
		if stateless {
			n.answeredStateless(req, text, in.ConversationID)
		}
		writeJSON(w, http.StatusOK, ChatCompletion{ID: id, Object: "chat.completion", Created: created, Model: req.Model,
			Choices: []CompletionChoice{{Message: CompletionMessage{Role: "assistant", Content: text}, FinishReason: finish}},
			Usage:   usage(ans), ConversationID: in.ConversationID})
		return
	}
	sw := newSSEWriter(w)
	chunk := func(delta ChunkDelta, finish *string, extra any) CompletionChunk {
		return CompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			Choices: []ChunkChoice{{Delta: delta, FinishReason: finish}}, ConversationID: in.ConversationID, Evoclaw: extra}
	}
	roleSent := false
	send := func(delta ChunkDelta, finish *string, extra any) {
		if !roleSent {
			roleSent = true
			empty := ""
			sw.event("", chunk(ChunkDelta{Role: "assistant", Content: &empty}, nil, nil))
		}
		sw.event("", chunk(delta, finish, extra))
	}
	ans, err := n.streamChat(r.Context(), in, sw, chatStream{
		progress: func(p actors.Progress) { send(ChunkDelta{}, nil, p) },
		dropped:  func(d DroppedNote) { send(ChunkDelta{}, nil, d) },
	})
	if err != nil {
		refused(err)
		code, typ := chatErrorStatus(err)
		n.logChatFailure(in.ConversationID, code, err)
		e := chatAPIError(typ, completionErrParam(req, err), in.ConversationID, err)
		if !sw.started {
			failedConversation(w, in.ConversationID, in.fresh, err)
			noRepeat(w, ans, err)
			writeChatError(w, code, e, err)
			return
		}
		// After the 200 header: an error event, as OpenAI's clients expect,
		// and no [DONE].
		sw.event("", errorBody{Error: e})
		return
	}
	text, finish := answerText(ans, req.Stop)
	if stateless {
		n.answeredStateless(req, text, in.ConversationID)
	}
	for _, piece := range textPieces(text, maxDeltaText) {
		send(ChunkDelta{Content: &piece}, nil, nil)
	}
	send(ChunkDelta{}, &finish, nil)
	if req.IncludeUsage {
		u := usage(ans)
		sw.event("", CompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			Choices: []ChunkChoice{}, Usage: &u, ConversationID: in.ConversationID})
	}
	sw.event("", "[DONE]")
}

// maxDeltaText bounds the text of one content chunk of a streamed answer.
// The loop's answer comes whole; sent in one chunk, a long one made an SSE
// line of up to six times its size (JSON escapes "<" and control
// characters in six bytes): a 44 KB HTML answer made a line of 124 KB.
// Clients that read the stream by line with aiohttp (Open WebUI among
// them) fail on a line over 128 KiB ("Chunk too big"). 4 KiB of text is at
// most 24 KiB escaped; standard clients join the deltas.
const maxDeltaText = 4 << 10

// textPieces cuts text into pieces of at most max bytes, each ending on a
// rune boundary (a byte that is not UTF-8 counts as one): they join to
// text. An empty text is one empty piece.
func textPieces(text string, max int) []string {
	pieces := make([]string, 0, len(text)/max+1)
	for len(text) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if cut == 0 { // no rune starts within max bytes: not UTF-8
			cut = max
		}
		pieces = append(pieces, text[:cut])
		text = text[cut:]
	}
	return append(pieces, text)
}

// completionErrParam is the request field a failed chat blames: the body's
// conversation_id when it is not a conversation id (none when only the
// header named it).
func completionErrParam(req completionInput, err error) string {
	if req.ConversationID == "" {
		return ""
	}
	return chatErrParam(err)
}

// writeChatError answers a chat that failed with err with code and the
// error body e; a 429 carries Retry-After as writeAPIError's does (more
// than 1 s when the chat's input waits for room: retryAfterSeconds).
func writeChatError(w http.ResponseWriter, code int, e APIError, err error) {
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", retryAfterSeconds(err))
	}
	noRetry(w, e)
	writeJSON(w, code, errorBody{Error: e})
}

// answerText is the answer's text and finish_reason as the client asked
// for them: cut before the first stop sequence it holds, which makes the
// finish "stop" (the model did not run out of tokens before it).
func answerText(ans *actors.Answer, stop []string) (string, string) {
	if text, cut := cutAtStop(ans.Text, stop); cut {
		return text, finishStop
	}
	return ans.Text, finishReason(ans)
}

// finishReason is the choice's finish_reason: "length" when a loop limit
// or the model server cut the answer short, "content_filter" when the
// server's filter did, else "stop" (a server's other values, such as
// llama.cpp's "eos", mean the model ended its answer; OpenAI's clients know
// only OpenAI's values).
func finishReason(ans *actors.Answer) string {
	switch {
	case ans.Limit != "", ans.FinishReason == llm.FinishLength:
		return finishLength
	case ans.FinishReason == llm.FinishFiltered:
		return finishFiltered
	}
	return finishStop
}

func usage(ans *actors.Answer) CompletionUsage {
	return CompletionUsage{PromptTokens: ans.Usage.InputTokens, CompletionTokens: ans.Usage.OutputTokens,
		TotalTokens: ans.Usage.InputTokens + ans.Usage.OutputTokens}
}

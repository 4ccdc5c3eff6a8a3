package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/evoclaw/evoclaw/actors"
)

// Names of the events of a streaming POST /v1/chat.
const (
	sseConversation = "conversation"
	sseProgress     = "progress"
	sseAnswer       = "answer"
	sseError        = "error"
)

// errNoAnswer is a chat stream that ended without its answer.
var errNoAnswer = errors.New("the node ended the chat stream without an answer")

// chatRequest is the body of POST /v1/chat.
type chatRequest struct {
	ConversationID string `json:"conversation_id,omitempty"`
	Text           string `json:"text"`
	Stream         bool   `json:"stream,omitempty"`
}

// chatAnswer is the answer of a chat (orchestrator.ChatResponse); fields
// the client does not show are not decoded.
type chatAnswer struct {
	ConversationID string `json:"conversation_id"`
	Text           string `json:"text"`
	// Error is set by nodes that answer a failed chat with its partial
	// answer and status 200.
	Error      string `json:"error"`
	Limit      string `json:"limit"`
	Iterations int    `json:"iterations"`
	ToolCalls  int    `json:"tool_calls"`

	// legacy is set when the node did not stream: it shows no progress.
	legacy bool
}

// chatEvents receives what a streaming chat says before its answer. The
// functions are called in order on the goroutine that called chat; nil
// ones are skipped.
type chatEvents struct {
	conversation func(id string)
	progress     func(actors.Progress)
}

// chat sends text to the conversation (empty: the node starts one) and
// returns the answer, streaming progress to ev as it comes. Cancelling ctx
// closes the request, which cancels the chat on the node.
func (c *nodeClient) chat(ctx context.Context, conv, text string, ev chatEvents) (*chatAnswer, error) {
	resp, err := c.do(ctx, http.MethodPost, "/v1/chat", chatRequest{ConversationID: conv, Text: text, Stream: true})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return decodeAnswer(ctx, resp.Body, ev)
	}
	quiet := newSilenceBound(resp.Body, nodeStreamSilence)
	defer quiet.Stop()
	sse := newSSEReader(quiet)
	for {
		e, err := sse.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, errNoAnswer
			}
			return nil, fmt.Errorf("read chat stream: %w", err)
		}
		switch e.Name {
		case sseConversation:
			var v struct {
				ConversationID string `json:"conversation_id"`
			}
			if err := json.Unmarshal([]byte(e.Data), &v); err != nil {
				return nil, fmt.Errorf("decode conversation event: %w", err)
			}
			if ev.conversation != nil && v.ConversationID != "" {
				quiet.held(func() { ev.conversation(v.ConversationID) })
			}
		case sseProgress:
			var p actors.Progress
			if err := json.Unmarshal([]byte(e.Data), &p); err != nil {
				continue // a step we cannot show is not worth failing the chat
			}
			if ev.progress != nil {
				quiet.held(func() { ev.progress(p) })
			}
		case sseAnswer:
			var a chatAnswer
			if err := json.Unmarshal([]byte(e.Data), &a); err != nil {
				return nil, fmt.Errorf("decode answer: %w", err)
			}
			return &a, nil
		case sseError:
			ae := apiErrorFrom([]byte(e.Data), http.StatusInternalServerError)
			return nil, ae
		}
	}
}

// decodeAnswer reads a whole JSON answer.
func decodeAnswer(ctx context.Context, body io.Reader, ev chatEvents) (*chatAnswer, error) {
	var a chatAnswer
	if err := json.NewDecoder(io.LimitReader(body, maxSSEEvent)).Decode(&a); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	a.legacy = true
	if ev.conversation != nil && a.ConversationID != "" {
		ev.conversation(a.ConversationID)
	}
	return &a, nil
}

// held runs fn, one of the caller's events, with the bound stopped: the
// time the caller takes (a person typing the reply to a question, for up
// to the node's question_timeout) is not the node's silence.
func (s *silenceBound) held(fn func()) {
	s.t.Stop()
	defer s.t.Reset(s.d)
	fn()
}

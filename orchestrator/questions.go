package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// ToolQuestion is the tool a model calls to ask the person in the chat.
const ToolQuestion = "question"

// Bounds of questions.
const (
	DefaultQuestionTimeout = 5 * time.Minute
	// MaxPendingQuestions bounds questions waiting for a reply on a node;
	// one more is refused with ErrTooManyQuestions.
	MaxPendingQuestions = 64
	// MaxQuestionText bounds a question and a reply, in bytes.
	MaxQuestionText = 4 << 10
	// maxAnswerBody bounds the body of POST /v1/chat/questions/{id}.
	maxAnswerBody = 16 << 10
)

// ErrNoPerson is the tool error of a question in a chat nobody reads live
// (the OpenAI-compatible endpoint, a scheduled job, a sub-agent's send).
const ErrNoPerson = "no person is attached to this chat"

// Errors of answering a question.
var (
	ErrQuestionUnknown  = errors.New("no such question waits for a reply (answered, timed out or never asked)")
	ErrTooManyQuestions = errors.New("too many questions wait for a reply")
)

// questions holds the questions waiting for a person's reply.
type questions struct {
	timeout time.Duration
	mu      sync.Mutex             // guards pending
	pending map[string]chan string // by question id; buffered, one reply
}

var _ actors.Toolbox = (*questions)(nil)

func newQuestions(timeout time.Duration) *questions {
	if timeout <= 0 {
		timeout = DefaultQuestionTimeout
	}
	return &questions{timeout: timeout, pending: map[string]chan string{}}
}

var questionDef = llm.ToolDef{Name: ToolQuestion,
	Description: "Ask the person you are chatting with a question and wait for the reply. Use it only when you cannot go on without them.",
	Parameters: map[string]any{"type": "object", "additionalProperties": false, "required": []string{"question"},
		"properties": map[string]any{"question": map[string]any{"type": "string", "maxLength": MaxQuestionText}}}}

// Defs implements actors.Toolbox.
func (q *questions) Defs() []llm.ToolDef { return []llm.ToolDef{questionDef} }

// Resolve implements actors.Toolbox.
func (q *questions) Resolve(call llm.ToolCall) (actors.Target, *skills.Output) {
	if call.Name != ToolQuestion {
		out := skills.Failed(wire.ErrNotFound, fmt.Sprintf("tool %q not found", call.Name))
		return actors.Target{}, &out
	}
	return actors.Target{Tool: ToolQuestion, Category: actors.CategoryEdgeCall, OwnTimeoutMS: q.timeout.Milliseconds(),
		Schema: questionDef.Parameters, Args: call.Arguments,
		Local: func(ctx context.Context, args json.RawMessage) skills.Output {
			var a struct {
				Question string `json:"question"`
			}
			if err := json.Unmarshal(args, &a); err != nil || strings.TrimSpace(a.Question) == "" {
				return skills.Failed(wire.ErrInvalidParams, "question: required")
			}
			c, _ := actors.CallerFrom(ctx)
			reply, err := q.ask(ctx, c, a.Question)
			if err != nil {
				code := wire.ErrExecutionFailed
				if errors.Is(err, context.DeadlineExceeded) {
					code = wire.ErrTimeout
				}
				return skills.Failed(code, err.Error())
			}
			return skills.Output{Content: []skills.Block{skills.TextBlock(reply)}}
		}}, nil
}

// A question's id: questionIDPrefix and questionIDBytes random bytes in
// lowercase hex.
const (
	questionIDPrefix = "q-"
	questionIDBytes  = 12
)

// validQuestionID reports whether id has the shape of a question's id.
// Another id names no question on any node.
func validQuestionID(id string) bool {
	h, ok := strings.CutPrefix(id, questionIDPrefix)
	if !ok || len(h) != 2*questionIDBytes {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// ask shows text to the person in c's chat and waits for the reply.
func (q *questions) ask(ctx context.Context, c actors.Caller, text string) (string, error) {
	if !c.Person || c.Progress == nil {
		return "", errors.New(ErrNoPerson)
	}
	b := make([]byte, questionIDBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	id := questionIDPrefix + hex.EncodeToString(b)
	ch := make(chan string, 1)
	q.mu.Lock()
	if len(q.pending) >= MaxPendingQuestions {
		q.mu.Unlock()
		return "", ErrTooManyQuestions
	}
	q.pending[id] = ch
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		delete(q.pending, id)
	}()
	p := actors.Progress{Kind: actors.ProgressQuestion, ConversationID: c.ConversationID, Time: time.Now(),
		QuestionID: id, Question: text}
	if dl, ok := ctx.Deadline(); ok {
		p.TimeoutMS = max(time.Until(dl).Milliseconds(), 1)
	}
	c.Progress(p)
	select {
	case reply := <-ch:
		return reply, nil
	case <-ctx.Done():
	}
	// The time ran out, perhaps as a reply was taken: withdraw the
	// question under the lock, then use a reply that came before it. A
	// reply the API answered 204 always reaches the model; one after
	// finds no question (404).
	q.mu.Lock()
	delete(q.pending, id)
	q.mu.Unlock()
	select {
	case reply := <-ch:
		return reply, nil
	default:
		return "", fmt.Errorf("nobody answered the question: %w", ctx.Err())
	}
}

// answer delivers the reply to question id.
func (q *questions) answer(id, reply string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	ch, ok := q.pending[id]
	if !ok {
		return ErrQuestionUnknown
	}
	delete(q.pending, id) // one reply: a second one finds nothing
	ch <- reply
	return nil
}

// AnswerRequest is the body of POST /v1/chat/questions/{id}.
type AnswerRequest struct {
	// Answer is the person's reply; required, and may be "" (a person who
	// only pressed Enter: the model gets an empty reply rather than
	// waiting until the question times out).
	Answer string `json:"answer"`
}

// decodeAnswer parses a reply body: exactly {"answer": "..."}, unknown
// fields and trailing data refused, answer required (a *fieldError).
func decodeAnswer(body []byte) (AnswerRequest, error) {
	var req struct {
		Answer *string `json:"answer"`
	}
	if err := decodeStrict(body, &req, `{"answer": "..."}`); err != nil {
		return AnswerRequest{}, err
	}
	if req.Answer == nil {
		return AnswerRequest{}, &fieldError{param: "answer", msg: `answer: required: the body is {"answer": "..."}`}
	}
	return AnswerRequest{Answer: *req.Answer}, nil
}

func (n *Node) handleAnswer(w http.ResponseWriter, r *http.Request) {
	if n.questions == nil {
		httpError(w, http.StatusNotFound, "the question tool is off ([loop] question_tool)")
		return
	}
	body, ok := readBody(w, r, maxAnswerBody)
	if !ok {
		return
	}
	req, err := decodeAnswer(body)
	if err != nil {
		writeAPIErrorParam(w, http.StatusBadRequest, errParam(err), err.Error())
		return
	}
	if len(req.Answer) > MaxQuestionText {
		writeAPIErrorParam(w, http.StatusBadRequest, "answer", fmt.Sprintf("answer: at most %d bytes", MaxQuestionText))
		return
	}
	if err := n.questions.answer(r.PathValue("id"), req.Answer); err != nil {
		// In a cluster the question may be another node's: the node
		// running the conversation that asked.
		if res, ok := n.askOthers(r.Context(), remoteOp{Op: remoteAnswer, ID: r.PathValue("id"), Answer: req.Answer}); ok {
			writeRemote(w, res)
			return
		}
		echoError(w, r, http.StatusNotFound, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

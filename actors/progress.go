package actors

import "time"

// Kinds of Progress events, in the order a chat emits them: every
// ProgressLLMStart is followed by one ProgressLLMEnd; every ProgressToolStart
// by any number of ProgressToolOutput and exactly one ProgressToolEnd.
const (
	// ProgressLLMStart: a completion was requested (Iteration counts the
	// tool turns before it).
	ProgressLLMStart = "llm_start"
	// ProgressLLMEnd: the completion ended (Status, ElapsedMS, Error; Text
	// when it asked for tools).
	ProgressLLMEnd = "llm_end"
	// ProgressToolStart: a tool call began (Agent, Tool, Args).
	ProgressToolStart = "tool_start"
	// ProgressToolOutput: a long-running tool streamed output while it
	// runs (Seq, Output); never the final result.
	ProgressToolOutput = "tool_output"
	// ProgressToolEnd: a tool call ended (Status, ErrorType, ElapsedMS).
	ProgressToolEnd = "tool_end"
	// ProgressApprovalWait: a tool call (between its ProgressToolStart and
	// ProgressToolEnd) waits for a person's approval (ApprovalID, Error
	// says why it is gated).
	ProgressApprovalWait = "approval_wait"
	// ProgressQuestion: a question tool call (between its ProgressToolStart
	// and ProgressToolEnd) asks the person (QuestionID, Question); the
	// reply is posted to POST /v1/chat/questions/{id}.
	ProgressQuestion = "question"
)

// MaxProgressArgs bounds Progress.Args; ProgressResultExcerpt bounds the
// result excerpt of a ProgressToolEnd; MaxProgressText bounds the text of
// a ProgressLLMEnd.
const (
	MaxProgressArgs       = 200
	ProgressResultExcerpt = 200
	MaxProgressText       = 1024
)

// Progress is one step of a running chat, for live views. It says what the
// loop is doing; the audit trail, not this, is the record.
type Progress struct {
	Kind           string    `json:"kind"`
	ConversationID string    `json:"conversation_id"`
	Time           time.Time `json:"time"`
	// Iteration is the number of tool turns before this step.
	Iteration int `json:"iteration"`
	// CallID is the model's id of the tool call, RequestID the wire id of
	// its command (empty for calls answered before anything ran).
	CallID    string `json:"call_id,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Agent is the edge agent that runs the tool ("" for the node's own);
	// Tool is the tool's name there (the name the model used when the call
	// never reached a tool).
	Agent string `json:"agent,omitempty"`
	Tool  string `json:"tool,omitempty"`
	// Args is the call's arguments as JSON, cut at MaxProgressArgs bytes.
	Args string `json:"args,omitempty"`
	// Status is "success" or "error" on the *_end kinds.
	Status    string `json:"status,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
	Error     string `json:"error,omitempty"`
	// Text is what the model wrote beside the tool calls it asked for
	// ("Checking the kitchen Pi."), cut at MaxProgressText
	// (ProgressLLMEnd); its final answer is the chat's answer, not this.
	Text string `json:"text,omitempty"`
	// Result is the start of a successful tool's result (ProgressToolEnd).
	Result    string `json:"result,omitempty"`
	ElapsedMS int64  `json:"elapsed_ms,omitempty"`
	// Seq numbers a call's ProgressToolOutput events from 1; Output is
	// the text of one.
	Seq    int64  `json:"seq,omitempty"`
	Output string `json:"output,omitempty"`
	// ApprovalID names the pending approval of a ProgressApprovalWait
	// (POST /v1/approvals/{id}/approve).
	ApprovalID string `json:"approval_id,omitempty"`
	// QuestionID and Question are those of a ProgressQuestion;
	// TimeoutMS is how long it waits for a reply (then the model goes on
	// without one).
	QuestionID string `json:"question_id,omitempty"`
	Question   string `json:"question,omitempty"`
	TimeoutMS  int64  `json:"timeout_ms,omitempty"`
}

// ProgressFunc receives the Progress events of one chat. It is called from
// actor goroutines and must not block: a slow consumer drops or buffers
// on its side.
type ProgressFunc func(Progress)

// ToolOutput is output a running tool streamed, routed by the edge actor
// to the tool-call actor that waits for RequestID's result.
type ToolOutput struct {
	RequestID string
	Seq       int64
	Output    string
}

// emit calls f when it is set.
func (f ProgressFunc) emit(p Progress) {
	if f != nil {
		f(p)
	}
}

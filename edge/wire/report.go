package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
)

// Report types of the envelope's report_type field (ReportProgress, an
// evoclaw extension, is in progress.go).
const (
	ReportResult    = "result"
	ReportError     = "error"
	ReportHeartbeat = "heartbeat"
	ReportMetric    = "metric"
)

// Result statuses.
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// Report is the envelope of every message on evoclaw/agents/{id}/reports.
// The request_id travels inside Payload.
type Report struct {
	AgentID    string          `json:"agent_id"`
	AgentType  string          `json:"agent_type,omitempty"`
	ReportType string          `json:"report_type"`
	Payload    json.RawMessage `json:"payload"`
	// Timestamp is Unix seconds.
	Timestamp int64 `json:"timestamp"`
}

// ToolResult is the payload of a result or error report answering a "tool"
// command. Success carries Result; failure carries Error and ErrorType.
type ToolResult struct {
	Status string `json:"status"`
	Tool   string `json:"tool"`
	// Result is the tool's output. Peers that send a non-string JSON value
	// have it kept as compact JSON text.
	Result    string    `json:"result,omitempty"`
	Error     string    `json:"error,omitempty"`
	ErrorType ErrorType `json:"error_type,omitempty"`
	Stderr    string    `json:"stderr,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	ElapsedMS int64     `json:"elapsed_ms"`
	RequestID string    `json:"request_id,omitempty"`
	// ResultBytes is the full size of the output when Result was cut.
	ResultBytes int64 `json:"result_bytes,omitempty"`
	Truncated   bool  `json:"truncated,omitempty"`
	// Content is the result as ordered text and image blocks, sent only
	// when it holds an image (an evoclaw extension: Result still carries
	// the text, images described in words, for peers that do not know it).
	Content []ContentBlock `json:"content,omitempty"`
	// Dropped marks the answer to a redelivered command whose first report
	// the agent no longer holds (ResultBytes is then the output's size).
	Dropped
}

// Kinds of a ContentBlock.
const (
	ContentText  = "text"
	ContentImage = "image"
)

// Bounds of ToolResult.Content, checked by DecodeToolResult.
const (
	// MaxContentBlocks bounds the blocks of one result.
	MaxContentBlocks = 16
	// MaxContentTextBytes bounds the text of all text blocks together.
	MaxContentTextBytes = 64 << 10
	// MaxContentImageBytes bounds the base64 data of all images together,
	// so that a result with images fits an MQTT packet of 1 MiB.
	MaxContentImageBytes = 512 << 10
)

// ContentBlock is one block of ToolResult.Content.
type ContentBlock struct {
	// Kind is ContentText or ContentImage.
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
	// MIMEType (image/png, image/jpeg, image/gif or image/webp) and Data
	// (standard base64) of an image.
	MIMEType string `json:"mime_type,omitempty"`
	Data     string `json:"data,omitempty"`
}

// CheckContent reports whether blocks keep ToolResult.Content's rules:
// known kinds, image types and valid base64, within the Max* bounds.
func CheckContent(blocks []ContentBlock) error {
	if len(blocks) > MaxContentBlocks {
		return &DecodeError{What: "tool result", Field: "content", Msg: fmt.Sprintf("%d blocks, at most %d", len(blocks), MaxContentBlocks)}
	}
	text, data := 0, 0
	for i, b := range blocks {
		field := fmt.Sprintf("content[%d]", i)
		switch b.Kind {
		case ContentText:
			text += len(b.Text)
		case ContentImage:
			switch b.MIMEType {
			case "image/png", "image/jpeg", "image/gif", "image/webp":
			default:
				return &DecodeError{What: "tool result", Field: field + ".mime_type", Msg: fmt.Sprintf("%.40q is not an image type evoclaw passes on", b.MIMEType)}
			}
			if _, err := base64.StdEncoding.DecodeString(b.Data); err != nil || b.Data == "" {
				return &DecodeError{What: "tool result", Field: field + ".data", Msg: "not standard base64"}
			}
			data += len(b.Data)
		default:
			return &DecodeError{What: "tool result", Field: field + ".kind", Msg: fmt.Sprintf("unknown value %.40q", b.Kind)}
		}
	}
	if text > MaxContentTextBytes {
		return &DecodeError{What: "tool result", Field: "content", Msg: fmt.Sprintf("%d bytes of text, at most %d", text, MaxContentTextBytes)}
	}
	if data > MaxContentImageBytes {
		return &DecodeError{What: "tool result", Field: "content", Msg: fmt.Sprintf("%d bytes of images, at most %d", data, MaxContentImageBytes)}
	}
	return nil
}

// ErrorPayload is the payload of an error report that is not a tool result
// (malformed command, unknown command, ...).
type ErrorPayload struct {
	Error     string    `json:"error"`
	ErrorType ErrorType `json:"error_type,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
}

// PingResult is the payload answering "ping". The public agent omits the
// request_id; evoclaw agents include it.
type PingResult struct {
	Pong      bool   `json:"pong"`
	RequestID string `json:"request_id,omitempty"`
}

// Heartbeat is the payload of a heartbeat report.
type Heartbeat struct {
	UptimeSec      int64          `json:"uptime_sec"`
	ActionsTotal   int64          `json:"actions_total"`
	ActionsSuccess int64          `json:"actions_success"`
	ActionsFailed  int64          `json:"actions_failed"`
	MemoryBytes    int64          `json:"memory_bytes"`
	Custom         map[string]any `json:"custom"`
}

// ToolInfo describes one tool an agent offers, in a tools_list result.
type ToolInfo struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
	TimeoutMS   int64          `json:"timeout_ms,omitempty"`
	// Category is the tool's category from its skill metadata ("file",
	// "exec", "web", "git", ...); it picks the caller's timeout rule. An
	// evoclaw extension: empty when the agent does not say.
	Category string `json:"category,omitempty"`
	// Permissions are what the tool needs granted on its agent, and
	// Sandboxing its OS sandbox (none, bubblewrap, firejail): evoclaw
	// extensions for operators (the console shows them), never sent to
	// the model; empty when the agent does not say.
	Permissions []string `json:"permissions,omitempty"`
	Sandboxing  string   `json:"sandboxing,omitempty"`
}

// ToolsList is the payload answering "tools_list".
type ToolsList struct {
	Tools     []ToolInfo `json:"tools"`
	RequestID string     `json:"request_id,omitempty"`
}

// DecodeReport parses a message from topicAgent's reports topic. It accepts
// the envelope of the public agent and the flat result shape of the spec
// ({"status","tool","result",...} at the top level), which it wraps in an
// envelope. An envelope naming another agent than its topic is refused.
func DecodeReport(topicAgent string, b []byte) (Report, error) {
	// An envelope is decoded in one pass, with what tells it from a flat
	// result. Input that does not decode so (a flat result whose fields
	// do not fit an envelope's, or a broken message) takes the two steps
	// that say which it is and what is wrong; both answer alike.
	var one struct {
		Report
		ReportType *string `json:"report_type"` // shadows Report's: absent is not ""
		Status     *string `json:"status"`
	}
	if t, err := objectBytes("report", b); err == nil && json.Unmarshal(t, &one) == nil && one.ReportType != nil {
		r := one.Report
		r.ReportType = *one.ReportType
		return checkEnvelope(topicAgent, r)
	}
	return decodeReportSteps(topicAgent, b)
}

// decodeReportSteps is DecodeReport in two steps: a probe for report_type
// and status, then the envelope.
func decodeReportSteps(topicAgent string, b []byte) (Report, error) {
	var probe struct {
		ReportType *string `json:"report_type"`
		Status     *string `json:"status"`
	}
	if err := decodeObject("report", b, &probe); err != nil {
		return Report{}, err
	}
	if probe.ReportType == nil {
		if probe.Status == nil {
			return Report{}, &DecodeError{What: "report", Field: "report_type", Msg: "required (or a flat result with \"status\")"}
		}
		rt := ReportResult
		if *probe.Status == StatusError {
			rt = ReportError
		}
		return Report{AgentID: topicAgent, ReportType: rt, Payload: json.RawMessage(bytes.TrimSpace(b))}, nil
	}
	var r Report
	if err := decodeObject("report", b, &r); err != nil {
		return Report{}, err
	}
	return checkEnvelope(topicAgent, r)
}

// checkEnvelope checks a decoded envelope from topicAgent's reports topic
// and normalises its agent_id and payload.
func checkEnvelope(topicAgent string, r Report) (Report, error) {
	switch r.ReportType {
	case ReportResult, ReportError, ReportHeartbeat, ReportMetric, ReportProgress, ReportAccepted, ReportDelegate:
	default:
		return Report{}, &DecodeError{What: "report", Field: "report_type", Msg: fmt.Sprintf("unknown value %q", r.ReportType)}
	}
	if r.AgentID == "" {
		r.AgentID = topicAgent
	} else if r.AgentID != topicAgent {
		return Report{}, &DecodeError{What: "report", Field: "agent_id", Msg: fmt.Sprintf("%q does not match topic agent %q", r.AgentID, topicAgent)}
	}
	p, err := objectOrEmpty("report", "payload", r.Payload)
	if err != nil {
		return Report{}, err
	}
	r.Payload = p
	return r, nil
}

// RequestID returns the request_id inside the report's payload, or "" when
// it has none (the public agent's ping answer, heartbeats).
func (r Report) RequestID() string {
	var p struct {
		RequestID any `json:"request_id"`
	}
	if json.Unmarshal(r.Payload, &p) != nil {
		return ""
	}
	switch v := p.RequestID.(type) {
	case string:
		if len(v) <= MaxRequestIDLen {
			return v
		}
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// DecodeToolResult parses a tool result from a result or error report.
// An error report that carries only {"error","request_id"} becomes a
// ToolResult with status "error".
func DecodeToolResult(r Report) (ToolResult, error) {
	var raw struct {
		ToolResult
		Result json.RawMessage `json:"result"`
	}
	if err := decodeObject("tool result", r.Payload, &raw); err != nil {
		return ToolResult{}, err
	}
	res := raw.ToolResult
	res.Result = ""
	if t := bytes.TrimSpace(raw.Result); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		var s string
		if t[0] == '"' {
			if err := json.Unmarshal(t, &s); err != nil {
				return ToolResult{}, translate("tool result", err)
			}
		} else {
			var buf bytes.Buffer
			if err := json.Compact(&buf, t); err != nil {
				return ToolResult{}, translate("tool result", err)
			}
			s = buf.String()
		}
		res.Result = s
	}
	if res.Status == "" {
		if r.ReportType == ReportError || res.Error != "" {
			res.Status = StatusError
		} else {
			res.Status = StatusSuccess
		}
	}
	switch res.Status {
	case StatusSuccess:
	case StatusError:
		if res.ErrorType == "" {
			res.ErrorType = ErrExecutionFailed
		}
		if res.Error == "" {
			res.Error = "tool failed without a message"
		}
	default:
		return ToolResult{}, &DecodeError{What: "tool result", Field: "status", Msg: fmt.Sprintf("unknown value %q", res.Status)}
	}
	if err := firstErr(nonNegative("tool result", "elapsed_ms", res.ElapsedMS), nonNegative("tool result", "result_bytes", res.ResultBytes),
		res.Dropped.check("tool result"), CheckContent(res.Content)); err != nil {
		return ToolResult{}, err
	}
	return res, nil
}

// DecodeToolsList parses a tools_list result.
func DecodeToolsList(r Report) (ToolsList, error) {
	if r.ReportType == ReportError {
		// The public agent answers a command it does not know this way.
		return ToolsList{}, &DecodeError{What: "tools list", Field: "report_type", Msg: "an error report, not a tools list"}
	}
	var keys map[string]json.RawMessage
	if err := decodeObject("tools list", r.Payload, &keys); err != nil {
		return ToolsList{}, err
	}
	if _, ok := keys["tools"]; !ok {
		return ToolsList{}, &DecodeError{What: "tools list", Field: "tools", Msg: "required"}
	}
	var l ToolsList
	if err := decodeObject("tools list", r.Payload, &l); err != nil {
		return ToolsList{}, err
	}
	for i, t := range l.Tools {
		if t.Name == "" {
			return ToolsList{}, &DecodeError{What: "tools list", Field: fmt.Sprintf("tools[%d].name", i), Msg: "required"}
		}
	}
	return l, nil
}

// DecodeErrorPayload parses the payload of an error report.
func DecodeErrorPayload(r Report) (ErrorPayload, error) {
	var p ErrorPayload
	if err := decodeObject("error payload", r.Payload, &p); err != nil {
		return ErrorPayload{}, err
	}
	if err := required("error payload", "error", p.Error); err != nil {
		return ErrorPayload{}, err
	}
	return p, nil
}

// NewReport builds a report envelope with its payload marshalled to JSON.
func NewReport(agentID, agentType, reportType string, ts int64, payload any) (Report, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return Report{}, fmt.Errorf("marshal %s report payload: %w", reportType, err)
	}
	return Report{AgentID: agentID, AgentType: agentType, ReportType: reportType, Payload: b, Timestamp: ts}, nil
}

// PromptResult is the payload answering a "prompt" command.
type PromptResult struct {
	Status        string         `json:"status"`
	Content       string         `json:"content"`
	Error         string         `json:"error,omitempty"`
	ErrorType     ErrorType      `json:"error_type,omitempty"`
	Model         string         `json:"model,omitempty"`
	AgentID       string         `json:"agent_id,omitempty"`
	RequestID     string         `json:"request_id,omitempty"`
	ToolsExecuted []ToolExecuted `json:"tools_executed"`
	Metadata      PromptMetadata `json:"metadata"`
	// Dropped marks the answer to a redelivered prompt whose first report
	// the agent no longer holds; Content or Error says so in words.
	Dropped
}

// ToolExecuted summarises one tool run inside an agent's own prompt loop.
type ToolExecuted struct {
	Tool    string `json:"tool"`
	Success bool   `json:"success"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
}

// PromptMetadata carries token counts and latency of a prompt answer.
type PromptMetadata struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	ElapsedMS    int64 `json:"elapsed_ms"`
}

// DecodePromptResult parses the answer to a "prompt" command.
func DecodePromptResult(r Report) (PromptResult, error) {
	var p PromptResult
	if err := decodeObject("prompt result", r.Payload, &p); err != nil {
		return PromptResult{}, err
	}
	if p.Status == "" {
		p.Status = StatusSuccess
		if r.ReportType == ReportError || p.Error != "" {
			p.Status = StatusError
		}
	}
	if p.Status != StatusSuccess && p.Status != StatusError {
		return PromptResult{}, &DecodeError{What: "prompt result", Field: "status", Msg: fmt.Sprintf("unknown value %q", p.Status)}
	}
	if err := p.Dropped.check("prompt result"); err != nil {
		return PromptResult{}, err
	}
	return p, nil
}

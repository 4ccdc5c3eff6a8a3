package skills

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/edge/wire"
)

// BlockKind says what a content Block holds.
type BlockKind string

// The kinds of content a tool returns.
const (
	// KindText is text for the model.
	KindText BlockKind = "text"
	// KindImage is an image, base64-encoded, with its MIME type.
	KindImage BlockKind = "image"
	// KindError is a failure with a stable error code.
	KindError BlockKind = "error"
)

// Block is one piece of a tool's output.
type Block struct {
	// Kind is KindText, KindImage or KindError.
	Kind BlockKind `json:"kind"`
	// Text is the text of a text block or the message of an error block.
	Text string `json:"text,omitempty"`
	// MIMEType is an image's type ("image/png"); empty for other kinds.
	MIMEType string `json:"mime_type,omitempty"`
	// Data is an image's bytes in standard base64; empty for other kinds.
	Data string `json:"data,omitempty"`
	// Code classifies an error block; empty for other kinds.
	Code wire.ErrorType `json:"code,omitempty"`
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Kind: KindText, Text: s} }

// ImageBlock returns an image block of base64 data.
func ImageBlock(mime, base64Data string) Block {
	return Block{Kind: KindImage, MIMEType: mime, Data: base64Data}
}

// ErrorBlock returns an error block.
func ErrorBlock(code wire.ErrorType, msg string) Block {
	return Block{Kind: KindError, Code: code, Text: msg}
}

// Output is the result of one tool call in content blocks. A call failed
// when it holds an error block; ErrorType returns its code.
type Output struct {
	// Content is what the tool returned, in order.
	Content []Block `json:"content"`
	// ExitCode is the exit status of a process the call ran, or nil when
	// none ran (built-in file tools, calls refused before running).
	ExitCode *int `json:"exit_code,omitempty"`
	// Stderr is the standard error of a process the call ran.
	Stderr string `json:"stderr,omitempty"`
	// ResultBytes counts the bytes the tool produced, including what was
	// cut; zero when nothing was cut.
	ResultBytes int64 `json:"result_bytes,omitempty"`
	// Truncated reports that the output was cut at a limit.
	Truncated bool `json:"truncated,omitempty"`
	// Elapsed is how long the call took.
	Elapsed time.Duration `json:"-"`
}

// Failed returns an Output holding a single error block.
func Failed(code wire.ErrorType, msg string) Output {
	return Output{Content: []Block{ErrorBlock(code, msg)}}
}

// ErrorType returns the code of the first error block, or "" when the call
// succeeded.
func (o Output) ErrorType() wire.ErrorType {
	for _, b := range o.Content {
		if b.Kind == KindError {
			return b.Code
		}
	}
	return ""
}

// Text concatenates the text blocks, one per line; images are described by
// their MIME type, size and SHA-256, since the flat result (and the audit
// row built from it) carries no binary data.
func (o Output) Text() string {
	var parts []string
	for _, b := range o.Content {
		switch b.Kind {
		case KindText:
			parts = append(parts, b.Text)
		case KindImage:
			parts = append(parts, b.describeImage())
		}
	}
	return strings.Join(parts, "\n")
}

// Succeeded reports whether the call succeeded: it holds no error block.
func (o Output) Succeeded() bool {
	for _, b := range o.Content {
		if b.Kind == KindError {
			return false
		}
	}
	return true
}

// ErrorText is the message of the first error block, "" when the call
// succeeded.
func (o Output) ErrorText() string {
	for _, b := range o.Content {
		if b.Kind == KindError {
			return b.Text
		}
	}
	return ""
}

// Wire converts the output to the flat result of the wire format, the one
// place where it is: status, the text as Result, the first error block as
// Error and ErrorType.
func (o Output) Wire(tool string) wire.ToolResult {
	r := wire.ToolResult{
		Status: wire.StatusSuccess, Tool: tool, Result: o.Text(), Stderr: o.Stderr, ExitCode: o.ExitCode,
		ElapsedMS: o.Elapsed.Milliseconds(), ResultBytes: o.ResultBytes, Truncated: o.Truncated,
	}
	images := false
	for _, b := range o.Content {
		if b.Kind == KindError && r.Status == wire.StatusSuccess {
			r.Status, r.ErrorType, r.Error = wire.StatusError, b.Code, b.Text
		}
		images = images || b.Kind == KindImage
	}
	if images {
		for _, b := range o.Content {
			switch b.Kind {
			case KindText:
				r.Content = append(r.Content, wire.ContentBlock{Kind: wire.ContentText, Text: b.Text})
			case KindImage:
				r.Content = append(r.Content, wire.ContentBlock{Kind: wire.ContentImage, MIMEType: b.MIMEType, Data: b.Data})
			}
		}
	}
	return r
}

// FromWire reads a wire result, the one place where it is: its content
// blocks when the agent sent them (images), else its text as a text block
// (when not empty); a failure as an error block (of type execution_failed
// when the peer named none).
//
// An answer whose report the agent dropped (r.ResultDropped) is the
// sentence of wire.DroppedNote, built from its fields, whatever it says
// besides: as the result when the first run succeeded, as the error's
// message (with the first run's error type) when it failed.
func FromWire(r wire.ToolResult) Output {
	o := Output{ExitCode: r.ExitCode, Stderr: r.Stderr, Truncated: r.Truncated, ResultBytes: r.ResultBytes,
		Elapsed: time.Duration(max(r.ElapsedMS, 0)) * time.Millisecond}
	if r.ResultDropped {
		o.Truncated, o.Stderr = false, ""
		if r.Status == wire.StatusSuccess {
			o.Content = []Block{TextBlock(wire.DroppedNote(r.Dropped, r.Status, "", r.ResultBytes))}
			return o
		}
		code := cmp.Or(r.ErrorType, wire.ErrExecutionFailed)
		o.Content = []Block{ErrorBlock(code, wire.DroppedNote(r.Dropped, r.Status, code, r.ResultBytes))}
		return o
	}
	if len(r.Content) > 0 && wire.CheckContent(r.Content) == nil {
		// The agent sent its blocks: images arrive as images.
		for _, b := range r.Content {
			if b.Kind == wire.ContentImage {
				o.Content = append(o.Content, ImageBlock(b.MIMEType, b.Data))
			} else {
				o.Content = append(o.Content, TextBlock(b.Text))
			}
		}
	} else if r.Result != "" {
		o.Content = append(o.Content, TextBlock(r.Result))
	}
	if r.Status != wire.StatusSuccess {
		code, msg := r.ErrorType, r.Error
		if code == "" {
			code = wire.ErrExecutionFailed
		}
		if msg == "" {
			msg = "the tool failed and sent no message"
		}
		o.Content = append(o.Content, ErrorBlock(code, msg))
	}
	return o
}

// describeImage names an image block without its data: MIME type, decoded
// size and the SHA-256 of the decoded bytes, which identify the picture in
// an audit row. Data that is not valid base64 is described by its length.
func (b Block) describeImage() string {
	raw, err := base64.StdEncoding.DecodeString(b.Data)
	if err != nil {
		return fmt.Sprintf("[image %s, %d base64 bytes, not valid base64]", b.MIMEType, len(b.Data))
	}
	sum := sha256.Sum256(raw)
	return fmt.Sprintf("[image %s, %d bytes, sha256 %s]", b.MIMEType, len(raw), hex.EncodeToString(sum[:]))
}

package actors

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/skills"
)

// MaxResultImageBytes bounds the images one tool result keeps in the
// conversation, in base64 bytes: they are stored with the history so that
// the model sees them again on later turns, and every byte of the history
// is written to the audit database. Images beyond it are replaced by a
// note. What reaches a model is bounded again by its endpoint's
// max_image_bytes and max_request_image_bytes.
const MaxResultImageBytes = 4 << 20

// toolParts is a successful result's content with its images, in order,
// for models that take images (llm.Message.Parts), and notes on images
// that are not kept (a type models do not take, broken base64, over
// MaxResultImageBytes). Parts is nil when no image is kept; a failed
// result is its error sentence alone. Text is bounded like toolContent's.
func toolParts(res skills.Output) (parts []llm.Part, notes []string) {
	if !res.Succeeded() {
		return nil, nil
	}
	left, kept := MaxToolResultBytes, 0
	images := 0
	for _, b := range res.Content {
		switch b.Kind {
		case skills.KindText:
			t := b.Text
			if len(t) > left {
				t = truncateResult(t, max(left, 256))
			}
			left -= len(t)
			parts = append(parts, llm.TextPart(t))
		case skills.KindImage:
			p := llm.ImagePart(b.MIMEType, b.Data)
			why := ""
			if err := llm.CheckImage(p); err != nil {
				why = err.Error()
			} else if kept+len(p.Data) > MaxResultImageBytes {
				why = fmt.Sprintf("the result's images exceed %d base64 bytes", MaxResultImageBytes)
			}
			if why != "" {
				note := llm.ImageNote(p, why)
				notes = append(notes, note)
				parts = append(parts, llm.TextPart(note))
				continue
			}
			kept += len(p.Data)
			images++
			parts = append(parts, p)
		}
	}
	if images == 0 {
		return nil, notes
	}
	if res.Truncated {
		parts = append(parts, llm.TextPart(fmt.Sprintf("[output truncated by the agent: %d bytes in all]", res.ResultBytes)))
	}
	return parts, notes
}

// toolMessage is the tool message the model sees for a call's result: the
// result as text (toolContent), and its images when it has some.
func toolMessage(call llm.ToolCall, res skills.Output) llm.Message {
	m := llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: toolContent(call.Name, res),
		IsError: !res.Succeeded()}
	parts, notes := toolParts(res)
	m.Parts = parts
	if len(notes) > 0 {
		m.Content += "\n" + strings.Join(notes, "\n")
	}
	return m
}

// auditText is a result as the audit trail keeps it: its text, with each
// image described by its type, size and SHA-256, never its data.
func auditText(res skills.Output) string {
	var lines []string
	for _, b := range res.Content {
		switch b.Kind {
		case skills.KindText:
			lines = append(lines, b.Text)
		case skills.KindImage:
			lines = append(lines, imageSummary(b))
		}
	}
	return strings.Join(lines, "\n")
}

// imageSummary describes an image block: "[image image/png, 5120 bytes,
// sha256 9f86d0…]", the size and hash of the decoded image.
func imageSummary(b skills.Block) string {
	raw, err := base64.StdEncoding.DecodeString(b.Data)
	if err != nil {
		return fmt.Sprintf("[image %s, %d base64 bytes that do not decode]", b.MIMEType, len(b.Data))
	}
	sum := sha256.Sum256(raw)
	return fmt.Sprintf("[image %s, %d bytes, sha256 %s]", b.MIMEType, len(raw), hex.EncodeToString(sum[:]))
}

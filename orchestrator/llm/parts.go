package llm

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unsafe"

	"github.com/evoclaw/evoclaw/edge/defaults"
)

// Types of Part.
const (
	PartText  = "text"
	PartImage = "image"
)

// Default bounds of the images sent in one request (see ImageLimits).
const (
	// DefaultMaxImageBytes is the largest image sent, in base64 bytes
	// (about 768 KiB of PNG or JPEG): far more than a model needs to read
	// a camera frame or a screenshot, and well under every API's own
	// limit (Anthropic: 5 MB per image, OpenAI: 20 MB).
	DefaultMaxImageBytes = 1 << 20
	// DefaultMaxRequestImageBytes bounds the images of one request
	// together, in base64 bytes; the newest images are kept.
	DefaultMaxRequestImageBytes = 4 << 20
)

// Part is one piece of a message's content: text, or an image.
type Part struct {
	// Type is PartText or PartImage.
	Type string `json:"type"`
	// Text of a text part.
	Text string `json:"text,omitempty"`
	// MIMEType of an image ("image/png").
	MIMEType string `json:"mime_type,omitempty"`
	// Data is an image's bytes in standard base64.
	Data string `json:"data,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// ImagePart returns an image part of base64 data.
func ImagePart(mime, base64Data string) Part {
	return Part{Type: PartImage, MIMEType: mime, Data: base64Data}
}

// Size is about what m holds in memory, in bytes: its strings, tool-call
// arguments and images, and the message and its parts and calls
// themselves. Bounds on a conversation's history count it.
func (m Message) Size() int {
	n := int(unsafe.Sizeof(m)) + len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Name)
	for _, p := range m.Parts {
		n += int(unsafe.Sizeof(p)) + len(p.Type) + len(p.Text) + len(p.MIMEType) + len(p.Data)
	}
	for _, c := range m.ToolCalls {
		n += int(unsafe.Sizeof(c)) + len(c.ID) + len(c.Name) + len(c.ArgumentsError) + len(c.Arguments)
	}
	return n
}

// HasImages reports whether m carries an image.
func (m Message) HasImages() bool {
	for _, p := range m.Parts {
		if p.Type == PartImage {
			return true
		}
	}
	return false
}

// AcceptedImageType reports whether both the OpenAI and the Anthropic API
// take images of this MIME type: PNG, JPEG, GIF and WebP.
func AcceptedImageType(mime string) bool {
	switch strings.ToLower(strings.TrimSpace(mime)) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// CheckImage says why an image part cannot be sent to a model: a type the
// APIs do not take, or data that is not standard base64. Nil when it can.
func CheckImage(p Part) error {
	if !AcceptedImageType(p.MIMEType) {
		return fmt.Errorf("type %q is not one models take (PNG, JPEG, GIF, WebP)", p.MIMEType)
	}
	if p.Data == "" {
		return fmt.Errorf("no image data")
	}
	if _, err := base64.StdEncoding.DecodeString(p.Data); err != nil {
		return fmt.Errorf("data is not standard base64: %w", err)
	}
	return nil
}

// ImageNote is the text that stands in for an image that is not sent, with
// the reason.
func ImageNote(p Part, why string) string {
	return fmt.Sprintf("[image %s, %d base64 bytes, not sent: %s]", p.MIMEType, len(p.Data), why)
}

// ImageLimits bound the images of one request. The zero value takes the
// defaults.
type ImageLimits struct {
	// PerImage is the largest image sent, in base64 bytes (0:
	// DefaultMaxImageBytes).
	PerImage int
	// PerRequest bounds all images of a request together, in base64 bytes
	// (0: DefaultMaxRequestImageBytes).
	PerRequest int
}

// LimitImages returns req with the images that exceed l replaced by notes
// (ImageNote): each image over PerImage, then, newest first, every image
// that would take the request over PerRequest. It also replaces images of
// a type the APIs do not take. A message left without images loses its
// Parts and gets the notes appended to its Content. It reports how many
// images it replaced; req itself is not modified.
func LimitImages(req Request, l ImageLimits) (Request, int) {
	defaults.Positive(&l.PerImage, DefaultMaxImageBytes)
	defaults.Positive(&l.PerRequest, DefaultMaxRequestImageBytes)
	var msgs []Message // copied on the first change
	replaced, total := 0, 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if !m.HasImages() {
			continue
		}
		var parts []Part
		var notes []string
		for j, p := range m.Parts {
			why := ""
			switch {
			case p.Type != PartImage:
			case !AcceptedImageType(p.MIMEType):
				why = "the model's API takes PNG, JPEG, GIF and WebP only"
			case len(p.Data) > l.PerImage:
				why = fmt.Sprintf("larger than the limit of %d base64 bytes per image", l.PerImage)
			case total+len(p.Data) > l.PerRequest:
				why = fmt.Sprintf("the request's images would exceed %d base64 bytes", l.PerRequest)
			default:
				total += len(p.Data)
			}
			if why == "" {
				if parts != nil {
					parts = append(parts, p)
				}
				continue
			}
			if parts == nil {
				parts = append([]Part(nil), m.Parts[:j]...)
			}
			note := ImageNote(p, why)
			parts = append(parts, TextPart(note))
			notes = append(notes, note)
			replaced++
		}
		if parts == nil {
			continue
		}
		if msgs == nil {
			msgs = append([]Message(nil), req.Messages...)
		}
		m.Parts = parts
		if !m.HasImages() {
			m = WithoutImages(m, notes...)
		}
		msgs[i] = m
	}
	if msgs != nil {
		req.Messages = msgs
	}
	return req, replaced
}

// WithoutImages returns m as text only: no Parts, and notes (if any)
// appended to its Content, one per line.
func WithoutImages(m Message, notes ...string) Message {
	m.Parts = nil
	if len(notes) > 0 {
		if m.Content != "" {
			m.Content += "\n"
		}
		m.Content += strings.Join(notes, "\n")
	}
	return m
}

// TextOnly returns req for a model that takes no images: every message as
// its Content, with no Parts. req itself is not modified.
func TextOnly(req Request) Request {
	var msgs []Message
	for i, m := range req.Messages {
		if m.Parts == nil {
			continue
		}
		if msgs == nil {
			msgs = append([]Message(nil), req.Messages...)
		}
		msgs[i] = WithoutImages(m)
	}
	if msgs != nil {
		req.Messages = msgs
	}
	return req
}

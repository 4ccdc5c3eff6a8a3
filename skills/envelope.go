package skills

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// maxEnvelopeBlocks bounds the blocks of one content envelope.
const maxEnvelopeBlocks = 32

// CheckImage returns an error unless mime is PNG, JPEG, GIF or WebP and
// raw is of that type (sniffed): the images a tool may hand the model.
func CheckImage(mime string, raw []byte) error {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		if len(mime) > 64 {
			mime = mime[:64] + "..."
		}
		return fmt.Errorf("mime_type %q, want image/png, image/jpeg, image/gif or image/webp", mime)
	}
	if got := http.DetectContentType(raw); got != mime {
		return fmt.Errorf("the data is %s, not %s", got, mime)
	}
	return nil
}

// ParseContent reads the content envelope a tool with output = "content"
// prints on stdout: {"content":[block, ...]} where a block is
// {"kind":"text","text":"..."} or {"kind":"image","mime_type":"image/png",
// "data":"<standard base64>"}. Images must be PNG, JPEG, GIF or WebP, and
// their bytes must be of the type they claim (sniffed). Error blocks are
// not accepted: a tool fails by its exit status.
func ParseContent(stdout []byte) ([]Block, error) {
	var env struct {
		Content []Block `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("not a JSON object {\"content\":[...]}: %w", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	if len(env.Content) == 0 || len(env.Content) > maxEnvelopeBlocks {
		return nil, fmt.Errorf("content holds %d blocks, want 1 to %d", len(env.Content), maxEnvelopeBlocks)
	}
	for i, b := range env.Content {
		switch b.Kind {
		case KindText:
			if b.MIMEType != "" || b.Data != "" || b.Code != "" || !utf8.ValidString(b.Text) {
				return nil, fmt.Errorf("block %d: a text block holds only valid UTF-8 text", i)
			}
		case KindImage:
			if b.Text != "" || b.Code != "" {
				return nil, fmt.Errorf("block %d: an image block holds mime_type and data only", i)
			}
			raw, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				return nil, fmt.Errorf("block %d: data is not standard base64: %w", i, err)
			}
			if err := CheckImage(b.MIMEType, raw); err != nil {
				return nil, fmt.Errorf("block %d: %w", i, err)
			}
		default:
			return nil, fmt.Errorf("block %d: kind %q, want text or image", i, b.Kind)
		}
	}
	return env.Content, nil
}

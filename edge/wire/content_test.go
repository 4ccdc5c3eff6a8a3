package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckContent(t *testing.T) {
	png := "iVBORw0KGgo="
	big := strings.Repeat("A", MaxContentImageBytes/2+4)
	tests := []struct {
		name   string
		blocks []ContentBlock
		field  string // "" means valid
	}{
		{"text and an image", []ContentBlock{{Kind: ContentText, Text: "hi"}, {Kind: ContentImage, MIMEType: "image/png", Data: png}}, ""},
		{"no blocks", nil, ""},
		{"unknown kind", []ContentBlock{{Kind: "audio"}}, "content[0].kind"},
		{"not an image type", []ContentBlock{{Kind: ContentImage, MIMEType: "text/html", Data: png}}, "content[0].mime_type"},
		{"not base64", []ContentBlock{{Kind: ContentImage, MIMEType: "image/png", Data: "%%%"}}, "content[0].data"},
		{"empty image", []ContentBlock{{Kind: ContentImage, MIMEType: "image/png"}}, "content[0].data"},
		{"too many blocks", make([]ContentBlock, MaxContentBlocks+1), "content"},
		{"too much text", []ContentBlock{{Kind: ContentText, Text: strings.Repeat("x", MaxContentTextBytes+1)}}, "content"},
		{"too many image bytes", []ContentBlock{{Kind: ContentImage, MIMEType: "image/png", Data: big},
			{Kind: ContentImage, MIMEType: "image/png", Data: big}}, "content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckContent(tt.blocks)
			var de *DecodeError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field != "" && (!errors.As(err, &de) || de.Field != tt.field):
				t.Fatalf("err %v, want a DecodeError on %s", err, tt.field)
			}
		})
	}
}

// A result with content decodes with it; one breaking its rules is refused
// as a whole, naming the field.
func TestDecodeToolResultContent(t *testing.T) {
	ok := `{"status":"success","tool":"cam","result":"[image image/png]","content":[{"kind":"image","mime_type":"image/png","data":"iVBORw0KGgo="}]}`
	r, err := DecodeToolResult(Report{AgentID: "a", ReportType: ReportResult, Payload: json.RawMessage(ok)})
	if err != nil || len(r.Content) != 1 || r.Content[0].MIMEType != "image/png" {
		t.Fatalf("%+v %v", r, err)
	}
	bad := strings.Replace(ok, `"mime_type":"image/png"`, `"mime_type":"image/svg+xml"`, 1)
	if _, err := DecodeToolResult(Report{AgentID: "a", ReportType: ReportResult, Payload: json.RawMessage(bad)}); err == nil ||
		!strings.Contains(err.Error(), "content[0].mime_type") {
		t.Fatalf("an SVG passed: %v", err)
	}
}

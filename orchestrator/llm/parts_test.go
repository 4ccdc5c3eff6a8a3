package llm

import (
	"strings"
	"testing"
)

const png1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func imageMsg(id string, imgs ...Part) Message {
	return Message{Role: RoleTool, ToolCallID: id, Content: "result " + id, Parts: append([]Part{TextPart("result " + id)}, imgs...)}
}

func TestLimitImages(t *testing.T) {
	big := ImagePart("image/png", strings.Repeat("A", 200))
	small := ImagePart("image/png", png1)
	req := Request{Messages: []Message{
		{Role: RoleUser, Content: "hi"},
		imageMsg("old", small),                            // 96 bytes: over the request cap once newer ones are counted
		imageMsg("mixed", big, small),                     // big over the per-image cap, small kept
		imageMsg("svg", ImagePart("image/svg+xml", png1)), // a type no API takes
	}}
	orig := req.Messages[2].Parts[1]
	out, n := LimitImages(req, ImageLimits{PerImage: 100, PerRequest: 100})
	if n != 3 {
		t.Fatalf("replaced %d, want 3", n)
	}
	if req.Messages[2].Parts[1] != orig || !req.Messages[1].HasImages() {
		t.Fatal("the request given was modified")
	}
	old := out.Messages[1]
	if old.Parts != nil || !strings.Contains(old.Content, "not sent: the request's images would exceed 100 base64 bytes") {
		t.Fatalf("old = %+v", old)
	}
	mixed := out.Messages[2]
	if len(mixed.Parts) != 3 || mixed.Parts[2] != small || !strings.Contains(mixed.Parts[1].Text, "[image image/png, 200 base64 bytes, not sent: larger than the limit of 100 base64 bytes per image]") {
		t.Fatalf("mixed = %+v", mixed.Parts)
	}
	if svg := out.Messages[3]; svg.Parts != nil || !strings.Contains(svg.Content, "result svg\n[image image/svg+xml, 96 base64 bytes, not sent: the model's API takes PNG") {
		t.Fatalf("svg = %+v", svg)
	}
	// Within the defaults nothing changes.
	req.Messages = req.Messages[:3]
	if same, n := LimitImages(req, ImageLimits{}); n != 0 || &same.Messages[0] != &req.Messages[0] {
		t.Fatalf("default limits replaced %d", n)
	}
}

func TestTextOnly(t *testing.T) {
	req := Request{Messages: []Message{{Role: RoleUser, Content: "hi"}, imageMsg("a", ImagePart("image/png", png1))}}
	out := TextOnly(req)
	if out.Messages[1].Parts != nil || out.Messages[1].Content != "result a" || !req.Messages[1].HasImages() {
		t.Fatalf("text only = %+v, given %+v", out.Messages, req.Messages)
	}
	text := Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}
	if TextOnly(text).Messages[0].Content != "hi" {
		t.Fatal("a text request changed")
	}
}

func TestCheckImage(t *testing.T) {
	for _, tt := range []struct {
		p    Part
		want string
	}{
		{ImagePart("image/png", png1), ""},
		{ImagePart("IMAGE/JPEG", png1), ""},
		{ImagePart("image/bmp", png1), "not one models take"},
		{ImagePart("image/png", ""), "no image data"},
		{ImagePart("image/png", "not base64!"), "not standard base64"},
	} {
		err := CheckImage(tt.p)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckImage(%s %q) = %v, want %q", tt.p.MIMEType, tt.p.Data, err, tt.want)
		}
	}
}

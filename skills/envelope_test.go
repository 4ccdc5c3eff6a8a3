package skills

import (
	"encoding/base64"
	"strings"
	"testing"
)

// png1 is a 1x1 PNG.
var png1 = base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"))

func TestParseContent(t *testing.T) {
	good := `{"content":[{"kind":"text","text":"hi"},{"kind":"image","mime_type":"image/png","data":"` + png1 + `"}]}`
	blocks, err := ParseContent([]byte(good + "\n"))
	if err != nil || len(blocks) != 2 || blocks[1].Kind != KindImage {
		t.Fatalf("good envelope = %+v, %v", blocks, err)
	}
	for _, bad := range []string{
		``, `{}`, `{"content":[]}`, `[1]`, good + good,
		`{"content":[{"kind":"error","code":"x","text":"y"}]}`,
		`{"content":[{"kind":"image","mime_type":"image/jpeg","data":"` + png1 + `"}]}`,
		`{"content":[{"kind":"image","mime_type":"image/svg+xml","data":"PHN2Zz4="}]}`,
		`{"content":[{"kind":"image","mime_type":"image/png","data":"not base64!"}]}`,
		`{"content":[{"kind":"text","text":"x","extra":1}]}`,
	} {
		if _, err := ParseContent([]byte(bad)); err == nil {
			t.Errorf("ParseContent(%.80q) accepted", bad)
		}
	}
}

// FuzzParseContent: any stdout is accepted only as well-formed blocks,
// never with a panic.
func FuzzParseContent(f *testing.F) {
	f.Add(`{"content":[{"kind":"text","text":"hi"}]}`)
	f.Add(`{"content":[{"kind":"image","mime_type":"image/png","data":"` + png1 + `"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		blocks, err := ParseContent([]byte(s))
		if err != nil {
			return
		}
		for _, b := range blocks {
			if b.Kind != KindText && b.Kind != KindImage || b.Kind == KindImage && !strings.HasPrefix(b.MIMEType, "image/") {
				t.Fatalf("accepted block %+v", b)
			}
		}
	})
}

package actors

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/skills"
)

// TestAuditRowImage: the audit row of a call that returned an image keeps
// its type, size and hash, never its base64.
func TestAuditRowImage(t *testing.T) {
	pic := []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("pixel", 400))
	data := base64.StdEncoding.EncodeToString(pic)
	sum := sha256.Sum256(pic)
	out := skills.Output{Content: []skills.Block{skills.TextBlock("snapshot.png: image/png image"), skills.ImageBlock("image/png", data)}}
	row := AuditRow(CallRef{Node: "n", Side: "edge", Tool: "read"}, out, time.Now())
	want := "[image image/png, 2008 bytes, sha256 " + hex.EncodeToString(sum[:]) + "]"
	if !strings.Contains(row.ResultExcerpt, want) || strings.Contains(row.ResultExcerpt, data[:40]) {
		t.Fatalf("excerpt %q, want it to hold %q and no base64", row.ResultExcerpt, want)
	}
}

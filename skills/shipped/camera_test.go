package shipped_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

// TestCameraSnapshot installs the shipped camera skill and runs its tool:
// the result is a text block and the fixture picture as an image block,
// and the audit row names the picture by type, size and hash, without
// its base64.
func TestCameraSnapshot(t *testing.T) {
	dir, err := shipped.Install("camera", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := skills.NewToolset(skills.NewCatalog(filepath.Dir(dir)), skills.ExecOptions{Granted: []string{"hw_read"}})
	out := ts.Call(context.Background(), "camera_snapshot", nil)
	if out.ErrorType() != "" || len(out.Content) != 2 {
		t.Fatalf("snapshot = %+v (stderr %q)", out, out.Stderr)
	}
	pic, err := os.ReadFile(filepath.Join(dir, "snapshot.png"))
	if err != nil {
		t.Fatal(err)
	}
	img := out.Content[1]
	if img.Kind != skills.KindImage || img.MIMEType != "image/png" || img.Data != base64.StdEncoding.EncodeToString(pic) {
		t.Fatalf("image block %+v", img)
	}
	sum := sha256.Sum256(pic)
	row := actors.AuditRow(actors.CallRef{Node: "pi", Side: "edge", Tool: "camera_snapshot"}, out, time.Now())
	if !strings.Contains(row.ResultExcerpt, "sha256 "+hex.EncodeToString(sum[:])) || strings.Contains(row.ResultExcerpt, img.Data[:32]) {
		t.Fatalf("audit excerpt %q", row.ResultExcerpt)
	}
	// Without hw_read it is not offered, and a call is denied.
	denied := skills.NewToolset(skills.NewCatalog(filepath.Dir(dir)), skills.ExecOptions{})
	if out := denied.Call(context.Background(), "camera_snapshot", nil); out.ErrorType() != wire.ErrPermissionDenied {
		t.Fatalf("snapshot without hw_read = %+v", out)
	}
}

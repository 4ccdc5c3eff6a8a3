package builtin_test

import (
	"context"
	"encoding/base64"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/builtin"
)

// growing is the local backend, but every file it opens then grows by
// grow bytes, as when a command keeps writing it: the info Open returns is
// from before.
type growing struct {
	builtin.Local
	grow int
}

func (g growing) Open(ctx context.Context, name string) (io.ReadCloser, fs.FileInfo, error) {
	rc, fi, err := g.Local.Open(ctx, name)
	if err != nil {
		return rc, fi, err
	}
	f, err := os.OpenFile(filepath.Join(g.Dir, filepath.FromSlash(name)), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.Write(make([]byte, g.grow))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return rc, fi, nil
}

// TestReadImageThatGrows: an image that grows past the read limit while
// it is read is refused, like one that was larger from the start. Before,
// its first limit+1 bytes went to the model as the image, over the limit
// and cut off (13 of 2000 reads of a PNG a goroutine kept rewriting).
func TestReadImageThatGrows(t *testing.T) {
	const limit = 64 << 10
	png, err := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		grow     int
		wantErr  wire.ErrorType
		wantSize int // of the image returned
	}{
		{"stays within the limit", limit - len(png), "", limit},
		{"grows past the limit", limit, wire.ErrExecutionFailed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "img.png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
			ts := fileTools(t, builtin.Options{Dir: ws, Files: growing{builtin.Local{Dir: ws}, tc.grow}, MaxReadBytes: limit})
			out := ts.Call(context.Background(), "read", map[string]any{"path": "img.png"})
			if out.ErrorType() != tc.wantErr {
				t.Fatalf("error %q %q, want %q", out.ErrorType(), out.ErrorText(), tc.wantErr)
			}
			if tc.wantErr != "" {
				if !strings.Contains(out.ErrorText(), "grew past the read limit") {
					t.Fatalf("error text %q", out.ErrorText())
				}
				return
			}
			data, err := base64.StdEncoding.DecodeString(out.Content[len(out.Content)-1].Data)
			if err != nil || len(data) != tc.wantSize {
				t.Fatalf("image of %d bytes (%v), want %d", len(data), err, tc.wantSize)
			}
		})
	}
}

package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// fakeFree makes every file system look as if free bytes were left, for
// the rest of the test.
func fakeFree(t *testing.T, free uint64, err error) {
	t.Helper()
	old := freeBytes
	freeBytes = func(*os.File) (uint64, error) { return free, err }
	t.Cleanup(func() { freeBytes = old })
}

func TestCheckRoom(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		name    string
		free    uint64
		freeErr error
		n       int
		refused bool
	}{
		{"plenty", 1 << 30, nil, 1 << 20, false},
		{"leaves exactly the floor", MinFreeBytes + 1024, nil, 1024, false},
		{"one byte under the floor", MinFreeBytes + 1023, nil, 1024, true},
		{"already under the floor", MinFreeBytes / 2, nil, 0, true},
		{"nothing free", 0, nil, 1, true},
		{"free space unknown", 0, errors.ErrUnsupported, 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeFree(t, tc.free, tc.freeErr)
			err := checkRoom(f, tc.n)
			if got := errors.Is(err, ErrDiskLow); got != tc.refused {
				t.Fatalf("checkRoom(%d bytes, %d free) = %v, refused %v, want %v", tc.n, tc.free, err, got, tc.refused)
			}
		})
	}
}

// TestFileSystemFree: the real reading is the file system's, not zero.
func TestFileSystemFree(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	free, err := fileSystemFree(f)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("free space is not read on this system")
	}
	if err != nil || free == 0 {
		t.Fatalf("fileSystemFree = %d, %v", free, err)
	}
}

// TestWritesKeepTheDiskFloor: write, edit and apply_patch refuse a write
// that would leave less than MinFreeBytes, say why, and leave the
// workspace as it was: no new file, no changed file, no temporaries.
func TestWritesKeepTheDiskFloor(t *testing.T) {
	for _, tc := range []struct {
		tool string
		mk   func(Options) (skills.GoTool, error)
		args map[string]any
	}{
		{"write new", NewWrite, map[string]any{"path": "new.txt", "content": strings.Repeat("x", 4096)}},
		{"write over", NewWrite, map[string]any{"path": "a.txt", "content": "replaced"}},
		{"edit", NewEdit, map[string]any{"path": "a.txt", "old_text": "two", "new_text": "TWO"}},
		{"apply_patch", NewApplyPatch, map[string]any{"patch": patchTwoFiles}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			ws := patchWorkspace(t)
			before := snapshot(t, ws)
			tool, err := tc.mk(Options{Dir: ws})
			if err != nil {
				t.Fatal(err)
			}
			fakeFree(t, MinFreeBytes-1, nil)
			out := tool.Run(context.Background(), tc.args)
			if msg := out.ErrorText(); out.ErrorType() != wire.ErrExecutionFailed || !strings.Contains(msg, "nearly full") || !strings.Contains(msg, "64 MiB") {
				t.Fatalf("%s on a nearly full disk = %v %q, want execution_failed naming the floor", tc.tool, out.ErrorType(), msg)
			}
			if got := snapshot(t, ws); !equalMaps(got, before) {
				t.Fatalf("workspace after a refused %s: %v, want %v", tc.tool, got, before)
			}
			fakeFree(t, 1<<40, nil)
			if out := tool.Run(context.Background(), tc.args); out.ErrorType() != "" {
				t.Fatalf("%s with room = %v %q", tc.tool, out.ErrorType(), out.Text())
			}
		})
	}
}

package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills/builtin"
)

// TestEditResultBoundedBeforeBuilt: an edit whose result would pass the
// size limit is refused before the result is built. Before, replace_all
// of a 1-byte text that occurs a million times by 1000 bytes allocated
// 1 GiB first, and by 10 000 bytes ended the agent with "fatal error: out
// of memory"; here the limit is 64 KiB, so the old code allocated 64 MiB.
func TestEditResultBoundedBeforeBuilt(t *testing.T) {
	const limit = 64 << 10
	for _, tc := range []struct {
		name             string
		old, new         string
		all              bool
		wantErr          wire.ErrorType
		wantLen, wantCut int // the file's length after; the most it may allocate (the race detector's included)
	}{
		{"every occurrence made 1000 times longer", "a", strings.Repeat("b", 1000), true, wire.ErrExecutionFailed, limit, 16 * limit},
		{"the one occurrence made longer than the limit", strings.Repeat("a", limit), strings.Repeat("b", limit+1), false, wire.ErrExecutionFailed, limit, 16 * limit},
		{"every occurrence, shorter", "aa", "b", true, "", limit / 2, 32 * limit},
		{"every occurrence, to exactly the limit", strings.Repeat("a", 64), strings.Repeat("b", 64), true, "", limit, 32 * limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte(strings.Repeat("a", limit)), 0o644); err != nil {
				t.Fatal(err)
			}
			ts := fileTools(t, builtin.Options{Dir: ws, MaxEditBytes: limit})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out := ts.Call(context.Background(), "edit", map[string]any{"path": "a.txt", "old_text": tc.old, "new_text": tc.new, "replace_all": tc.all})
			runtime.ReadMemStats(&after)
			if out.ErrorType() != tc.wantErr || tc.wantErr != "" && !strings.Contains(out.ErrorText(), "larger than") {
				t.Fatalf("error %q %q, want %q", out.ErrorType(), out.ErrorText(), tc.wantErr)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(tc.wantCut) {
				t.Errorf("the edit allocated %d KiB, want at most %d KiB", alloc>>10, tc.wantCut>>10)
			}
			b, err := os.ReadFile(filepath.Join(ws, "a.txt"))
			if err != nil || len(b) != tc.wantLen {
				t.Fatalf("file of %d bytes (%v), want %d", len(b), err, tc.wantLen)
			}
		})
	}
}

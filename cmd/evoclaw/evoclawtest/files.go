package evoclawtest

import (
	"os"
	"path/filepath"
	"testing"
)

// CopyDir copies the regular files of src (not recursively) into a new
// directory and returns it; keep filters them by name (nil copies all).
func CopyDir(t testing.TB, src string, keep func(name string) bool) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || keep != nil && !keep(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

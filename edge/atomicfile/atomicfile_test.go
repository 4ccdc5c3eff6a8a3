package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Write creates or replaces the file with its content and mode and leaves
// nothing else behind; when it cannot replace the file, the file is as it
// was and no temporary file remains.
func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  func(t *testing.T, path string) // what is at path first
		perm    os.FileMode
		wantErr bool
		want    string // content of path afterwards; "" for a directory
	}{
		{"creates", func(*testing.T, string) {}, 0o640, false, "new\n"},
		{"replaces", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("old content, longer than the new\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, 0o755, false, "new\n"},
		{"refused over a directory", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, 0o600, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.txt")
			tc.before(t, path)
			err := Write(path, []byte("new\n"), tc.perm)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Write: %v, want error %v", err, tc.wantErr)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, []string{"f.txt"}) {
				t.Fatalf("directory holds %v, want only f.txt", names)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if !fi.IsDir() {
					t.Fatalf("%s is no longer the directory", path)
				}
				return
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != tc.want {
				t.Fatalf("content %q %v, want %q", b, err, tc.want)
			}
			if fi.Mode().Perm() != tc.perm {
				t.Fatalf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
			}
		})
	}
}

// A directory that does not exist is an error, and nothing is created.
func TestWriteMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	if err := Write(filepath.Join(dir, "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("stat %s: %v, want not exist", dir, err)
	}
}

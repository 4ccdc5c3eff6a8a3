package orchestrator

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileAtomicKeepsAnUnchangedFile: the API address file is
// replaced when its content changes and left alone (the same file) when
// it would not; no temporary file is left either way.
func TestWriteFileAtomicKeepsAnUnchangedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), HTTPAddrFile)
	write := func(data string) os.FileInfo {
		t.Helper()
		if err := writeFileAtomic(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("file holds %q (%v), want %q", got, err, data)
		}
		if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
			t.Fatalf("temporary file left: %v", err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	first := write("http://127.0.0.1:8787\n")
	if same := write("http://127.0.0.1:8787\n"); !os.SameFile(first, same) {
		t.Error("an unchanged address replaced the file")
	}
	if changed := write("http://127.0.0.1:8788\n"); os.SameFile(first, changed) {
		t.Error("a changed address was written in place, not replaced")
	}
}

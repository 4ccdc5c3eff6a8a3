package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestWriteChecksums(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"evoclaw_v1.0.0_linux_armv6": "arm", "evoclaw_1.0.0_linux_amd64.deb": "deb", "empty": ""}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeChecksums(dir, []string{"evoclaw_v1.0.0_linux_armv6", "evoclaw_1.0.0_linux_amd64.deb", "empty"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	// GNU coreutils' format, sorted by name; the empty file's digest is
	// the well-known SHA-256 of nothing.
	want := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty\n"
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) != 4 || lines[3] != "" || lines[0] != want {
		t.Fatalf("SHA256SUMS:\n%s", b)
	}
	line := regexp.MustCompile(`^[0-9a-f]{64}  [^ /]+\n$`)
	for _, l := range lines[:3] {
		if !line.MatchString(l) {
			t.Errorf("line %q is not <sha256><2 spaces><name>", l)
		}
	}
	if !strings.HasSuffix(lines[1], "  evoclaw_1.0.0_linux_amd64.deb\n") || !strings.HasSuffix(lines[2], "  evoclaw_v1.0.0_linux_armv6\n") {
		t.Errorf("not sorted by name:\n%s", b)
	}
	if sum, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command(sum, "--check", "--strict", ChecksumsFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sha256sum --check: %v\n%s", err, out)
		}
		// And it notices a changed file.
		if err := os.WriteFile(filepath.Join(dir, "empty"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Run(); err == nil {
			t.Fatal("sha256sum --check passed a changed file")
		}
	}
	if err := writeChecksums(dir, []string{"../escape"}); err == nil {
		t.Error("writeChecksums accepted a path")
	}
}

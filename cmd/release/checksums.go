package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evoclaw/evoclaw/edge/atomicfile"
)

// ChecksumsFile is the name of the checksums file in the output directory.
const ChecksumsFile = "SHA256SUMS"

// sha256File returns the hex SHA-256 of a file's contents.
func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeChecksums writes dir/SHA256SUMS for the named files of dir, in the
// format of GNU sha256sum (`sha256sum -c SHA256SUMS` checks it): one line
// per file, sorted by name, "<64 hex digits><space><space><name>".
func writeChecksums(dir string, names []string) error {
	names = slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, n := range names {
		if strings.ContainsAny(n, "/\\\n") {
			return fmt.Errorf("checksums: %q is not a plain file name", n)
		}
		sum, err := sha256File(filepath.Join(dir, n))
		if err != nil {
			return fmt.Errorf("checksums: %w", err)
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return atomicfile.Write(filepath.Join(dir, ChecksumsFile), []byte(b.String()), 0o644)
}

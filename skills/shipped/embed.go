// Package shipped holds the skills that come inside the evoclaw binary, so
// that a fresh install can write them out and run them.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package shipped

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/evoclaw/evoclaw/edge/atomicfile"
)

//go:embed all:demo all:bench all:system all:camera
var files embed.FS

// Names lists the shipped skills.
func Names() []string { return []string{"bench", "camera", "demo", "system"} }

// Install writes skill name into dir/name, keeping executable bits for
// files under bin/. Existing files are replaced.
func Install(name, dir string) (string, error) {
	sub, err := fs.Sub(files, name)
	if err != nil {
		return "", fmt.Errorf("install skill %q: %w", name, err)
	}
	if _, err := fs.Stat(sub, "skill.toml"); err != nil {
		return "", fmt.Errorf("install skill %q: no such shipped skill (have %v)", name, Names())
	}
	dest := filepath.Join(dir, name)
	if err := WriteTree(sub, dest); err != nil {
		return "", fmt.Errorf("install skill %q: %w", name, err)
	}
	return dest, nil
}

// WriteTree writes the files of fsys (a skill's directory, or a directory
// of skills) under dest, keeping executable bits for files in a bin/
// directory. Existing files are replaced, each atomically.
func WriteTree(fsys fs.FS, dest string) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dest, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if filepath.Base(filepath.Dir(target)) == "bin" {
			mode = 0o755
		}
		return atomicfile.Write(target, b, mode)
	})
}

// Package tomlconf reads the TOML configuration files of evoclaw's
// programs (agent.toml, evoclaw.toml) the one way they are all read: a key
// the program does not know is an error, not silently ignored, and a
// relative path in the file is relative to the file's directory, so that a
// relative --config does not leave it relative to the working directory.
//
// This package is part of evoclaw's implementation, not its embedding API
// (docs/EMBEDDING.md): other top-level folders of evoclaw share it, so it
// cannot live in an internal/ folder, and it may change without notice.
package tomlconf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// MaxFileSize bounds a configuration file: far above any real one, it
// keeps a path that names a device or a runaway generated file from
// being read without end.
const MaxFileSize = 16 << 20

// ErrTooDeep is the error for a file nested deeper than MaxNesting.
var ErrTooDeep = fmt.Errorf("arrays, inline tables or dotted keys nested deeper than %d", MaxNesting)

// DecodeFile decodes the TOML file at path into v and returns the absolute
// directory of the file, for Resolve. A key that v has no field for is an
// error naming every such key.
func DecodeFile(path string, v any) (dir string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return "", err
	}
	if len(src) > MaxFileSize {
		return "", fmt.Errorf("%s is larger than %d bytes", path, MaxFileSize)
	}
	if err := Decode(string(src), v); err != nil {
		return "", err
	}
	return filepath.Abs(filepath.Dir(path))
}

// Decode decodes the TOML text src into v as DecodeFile does a file: a key
// that v has no field for is an error, and so are a number but zero given
// to a time.Duration field (which would count nanoseconds) and nesting deeper than
// MaxNesting, found before the parser, whose work grows with the square
// of the depth, sees the text.
func Decode(src string, v any) error {
	if line := TooDeep([]byte(src)); line > 0 {
		return fmt.Errorf("line %d: %w", line, ErrTooDeep)
	}
	md, err := toml.Decode(src, v)
	if err != nil {
		return valueErr(err, v)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return unknownKeys(und, v)
	}
	return bareDurations(src, md, v)
}

// Resolve returns p joined to dir when p is relative, and an empty or
// absolute p unchanged.
func Resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

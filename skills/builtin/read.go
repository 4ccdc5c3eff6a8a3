package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// sniffLen is how much of a file decides between text, image and binary.
const sniffLen = 512

// NewRead returns the read tool: a text file's lines, within the line and
// byte limits and from an offset, or an image as base64 with its MIME type.
// Other binary files are refused.
func NewRead(o Options) (skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return skills.GoTool{}, err
	}
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "read",
			Description: fmt.Sprintf("Read a file in the workspace. Text comes back as is, at most %d lines or %d KiB per call "+
				"(use offset and limit to page); PNG, JPEG, GIF and WebP images come back as images.", o.MaxReadLines, o.MaxReadBytes>>10),
			Parameters: params([]string{"path"},
				"path", skills.TypeString, "File to read, relative to the workspace (or absolute inside it)",
				"offset", skills.TypeInteger, "First line to return, counting from 1 (default 1)",
				"limit", skills.TypeInteger, fmt.Sprintf("Most lines to return (default and maximum %d)", o.MaxReadLines)),
			Permissions: o.perms(skills.PermFileRead),
		},
		Run: o.guarded("read", o.read),
	}, nil
}

func (o Options) read(ctx context.Context, args map[string]any) skills.Output {
	p := str(args, "path")
	offset, limit := integer(args, "offset", 1), integer(args, "limit", int64(o.MaxReadLines))
	if offset < 1 || limit < 1 {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("read: offset and limit must be at least 1, got offset=%d limit=%d", offset, limit))
	}
	limit = min(limit, int64(o.MaxReadLines))
	name, fail := o.path("read", p)
	if fail != nil {
		return *fail
	}
	rc, fi, err := o.Files.Open(ctx, name)
	if err != nil {
		return fileFailure(ctx, "read", p, err)
	}
	defer rc.Close() // read-only
	br := bufio.NewReaderSize(rc, 64<<10)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) {
		return fileFailure(ctx, "read", p, err)
	}
	if mime := imageType(head); mime != "" {
		if fi.Size() > int64(o.MaxReadBytes) {
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("read %q: %s image of %d bytes is larger than the read limit of %d bytes", p, mime, fi.Size(), o.MaxReadBytes))
		}
		data, err := io.ReadAll(io.LimitReader(br, int64(o.MaxReadBytes)+1))
		if err != nil {
			return fileFailure(ctx, "read", p, err)
		}
		if len(data) > o.MaxReadBytes { // it grew since it was opened: the rest would be cut off
			return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("read %q: %s image grew past the read limit of %d bytes while it was read", p, mime, o.MaxReadBytes))
		}
		return skills.Output{Content: []skills.Block{
			skills.TextBlock(fmt.Sprintf("%s: %s image, %d bytes", p, mime, len(data))),
			skills.ImageBlock(mime, base64.StdEncoding.EncodeToString(data)),
		}}
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return skills.Failed(wire.ErrExecutionFailed, fmt.Sprintf("read %q: binary file (%d bytes), not shown; use bash with od or file to inspect it", p, fi.Size()))
	}
	return o.readLines(ctx, br, p, offset, limit)
}

// readLines returns lines offset.. of r, at most limit of them and at most
// MaxReadBytes, reading no more of r than it returns (plus one buffer), so
// a huge file or a huge line costs bounded memory.
func (o Options) readLines(ctx context.Context, br *bufio.Reader, p string, offset, limit int64) skills.Output {
	var (
		b           strings.Builder
		line        int64 = 1 // number of the line being read
		shown       int64
		more, cut   bool
		inLine      bool // part of the current line was read
		firstShown  int64
		lastShown   int64
		readErr     error
		checkEveryN = 4096
	)
	for i := 0; ; i++ {
		if i%checkEveryN == 0 && ctx.Err() != nil {
			return fileFailure(ctx, "read", p, context.Cause(ctx))
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && line >= offset {
			if !inLine && shown == limit {
				more = true
				break
			}
			if firstShown == 0 {
				firstShown = line
			}
			room := o.MaxReadBytes - b.Len()
			if len(chunk) > room {
				b.Write(trimPartialRune(chunk[:room]))
				cut, lastShown = true, line
				break
			}
			b.Write(chunk)
			lastShown = line
		}
		inLine = len(chunk) > 0 && chunk[len(chunk)-1] != '\n'
		if len(chunk) > 0 && !inLine {
			if line >= offset {
				shown++
			}
			line++
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			inLine = true
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
	}
	if readErr != nil {
		return fileFailure(ctx, "read", p, readErr)
	}
	if firstShown == 0 {
		if offset == 1 {
			return skills.Output{Content: []skills.Block{skills.TextBlock("")}}
		}
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("read %q: offset %d is past the end of the file (%d lines)", p, offset, line-1))
	}
	text := b.String()
	switch {
	case cut:
		text += fmt.Sprintf("\n[cut at %d bytes in line %d; read from offset=%d with a smaller limit, or use grep]", o.MaxReadBytes, lastShown, lastShown+1)
	case more:
		text += fmt.Sprintf("\n[showing lines %d-%d; more follows: read with offset=%d]", firstShown, lastShown, lastShown+1)
	}
	return skills.Output{Content: []skills.Block{skills.TextBlock(text)}, Truncated: cut || more}
}

// imageType returns the MIME type of an image format the model can take,
// or "".
func imageType(head []byte) string {
	switch t := http.DetectContentType(head); t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return t
	}
	return ""
}

// trimPartialRune drops a rune cut in half at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

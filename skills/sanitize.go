package skills

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxIDLen is the longest session, conversation or agent id ValidateID
// accepts, in bytes.
const MaxIDLen = 256

// ErrInvalidID is wrapped by every error of ValidateID.
var ErrInvalidID = errors.New("invalid id")

// Sanitize returns s as valid UTF-8 without NUL, DEL and the other C0 and
// C1 control characters, keeping newline, carriage return and tab. Tool
// output goes through it before the model sees it, so a tool cannot smuggle
// terminal escapes or NULs into a conversation or the audit trail.
func Sanitize(s string) string {
	clean := true
	for _, r := range s {
		if dropRune(r) {
			clean = false
			break
		}
	}
	if clean && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if !dropRune(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func dropRune(r rune) bool {
	switch {
	case r == '\n' || r == '\r' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	}
	return false
}

// ValidateID checks an id that will name files or directories (a session,
// conversation or agent id): 1 to MaxIDLen bytes of valid UTF-8, no path
// separator, no "..", no NUL or other control character, not "." alone.
// kind names the id in the error ("session id").
func ValidateID(kind, id string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s %q %s", ErrInvalidID, kind, truncateForError(id), why)
	}
	switch {
	case id == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalidID, kind)
	case len(id) > MaxIDLen:
		return bad(fmt.Sprintf("is %d bytes long, at most %d", len(id), MaxIDLen))
	case !utf8.ValidString(id):
		return bad("is not valid UTF-8")
	case strings.ContainsAny(id, `/\`):
		return bad("contains a path separator")
	case strings.Contains(id, ".."):
		return bad(`contains ".."`)
	case id == ".":
		return bad("is the current directory")
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return bad("contains a control character")
		}
	}
	return nil
}

// truncateForError keeps error messages short for over-long ids.
func truncateForError(s string) string {
	if len(s) <= 40 {
		return s
	}
	return strings.ToValidUTF8(s[:40], "") + "…"
}

package skills

import (
	"errors"
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\r\n":     "plain\ttext\r\n",
		"nul\x00del\x7fbel\a": "nuldelbel",
		"\x1b[2Jclear":        "[2Jclear",
		"c1\u0085\u009bx":     "c1x",
		"bad\xffutf8":         "bad\uFFFDutf8",
		"héllo wörld ✓":       "héllo wörld ✓",
		"":                    "",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidateID(t *testing.T) {
	good := []string{"conv-1", "a", "pi_kitchen.01", "ümlaut", strings.Repeat("x", MaxIDLen)}
	bad := []string{"", "..", "a/b", `a\b`, "a..b", ".", "nul\x00", "tab\t", strings.Repeat("x", MaxIDLen+1), "bad\xff"}
	for _, id := range good {
		if err := ValidateID("session id", id); err != nil {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
	for _, id := range bad {
		if err := ValidateID("session id", id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidID", id, err)
		}
	}
}

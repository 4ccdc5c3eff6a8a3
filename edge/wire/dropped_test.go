package wire

import (
	"strings"
	"testing"
)

// TestDroppedNote: the sentence says the request ran once and was not run
// again, its outcome, and the sizes and hash it was given.
func TestDroppedNote(t *testing.T) {
	const h = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
	tests := []struct {
		name        string
		d           Dropped
		status      string
		errType     ErrorType
		resultBytes int64
		want, not   []string
	}{
		{"succeeded", Dropped{true, true, 524198, h}, StatusSuccess, "", 524000,
			[]string{"ran once", "succeeded", "524000 bytes", "524198 bytes", "sha256 " + h, "not run again"}, []string{"failed"}},
		{"failed", Dropped{true, true, 900, h}, StatusError, ErrTimeout, 0,
			[]string{"failed (timeout)", "sha256 " + h, "not run again"}, []string{"succeeded", "output ("}},
		{"nothing known", Dropped{Duplicate: true, ResultDropped: true}, StatusError, "", 0,
			[]string{"error type not known", "dropped its report to", "not run again"}, []string{"sha256"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			note := DroppedNote(tt.d, tt.status, tt.errType, tt.resultBytes)
			for _, w := range tt.want {
				if !strings.Contains(note, w) {
					t.Errorf("%q lacks %q", note, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(note, n) {
					t.Errorf("%q says %q", note, n)
				}
			}
		})
	}
}

// TestDroppedCheck: sizes must not be negative and a hash must be 64
// lowercase hex digits; an answer without them is fine.
func TestDroppedCheck(t *testing.T) {
	tests := []struct {
		d     Dropped
		field string // "" = valid
	}{
		{Dropped{}, ""},
		{Dropped{true, true, 10, strings.Repeat("a", 64)}, ""},
		{Dropped{true, true, -1, ""}, "report_bytes"},
		{Dropped{true, true, 1, strings.Repeat("A", 64)}, "report_sha256"},
		{Dropped{true, true, 1, strings.Repeat("a", 63)}, "report_sha256"},
		{Dropped{true, true, 1, strings.Repeat("g", 64)}, "report_sha256"},
	}
	for _, tt := range tests {
		err := tt.d.check("tool result")
		de, _ := err.(*DecodeError)
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v: %v", tt.d, err)
		case tt.field != "" && (de == nil || de.Field != tt.field):
			t.Errorf("%+v: %v, want an error on %s", tt.d, err, tt.field)
		}
	}
}

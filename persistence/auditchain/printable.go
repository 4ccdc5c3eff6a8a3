package auditchain

import (
	"strconv"
	"unicode/utf8"
)

// MaxPrintable is the most bytes of one value Printable keeps.
const MaxPrintable = 80

// Printable returns s fit for one line of a report: at most MaxPrintable
// bytes of it, with control characters and invalid UTF-8 escaped, and
// quoted when it had to be changed. Values read from a database may be
// forged, so whatever prints them bounds them first.
func Printable(s string) string {
	clean := len(s) <= MaxPrintable && utf8.ValidString(s)
	if clean {
		for _, r := range s {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '"' {
				clean = false
				break
			}
		}
	}
	if clean {
		return s
	}
	cut := s
	more := ""
	if len(cut) > MaxPrintable {
		cut, more = cut[:MaxPrintable], "..."
	}
	return strconv.QuoteToASCII(cut) + more + "(" + strconv.Itoa(len(s)) + " bytes)"
}

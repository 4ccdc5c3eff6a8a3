package sqlite

import (
	"bufio"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// rowCount says n rows in English: "1 row", "0 rows", "2 rows".
func rowCount(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// maxCellRunes is the widest cell WriteTable prints, in runes.
const maxCellRunes = 80

// WriteTable writes r as an aligned text table: a header, a separator, one
// line per row, then "(1 row)" or "(N rows)". NULL prints as NULL, a BLOB that is not
// UTF-8 as x'hex', newlines and tabs as \n, \r and \t, and cells longer than
// 80 runes are cut, ending in "…". Other control characters are escaped
// as \xNN or \uNNNN so that tool output cannot drive the terminal.
func (r *Result) WriteTable(w io.Writer) error {
	cells := make([][]string, 0, len(r.Rows)+1)
	cells = append(cells, make([]string, len(r.Columns)))
	for i, c := range r.Columns {
		cells[0][i] = tableCell(c)
	}
	for _, row := range r.Rows {
		line := make([]string, len(r.Columns))
		for i := range line {
			if i < len(row) {
				line[i] = tableCell(cellText(row[i]))
			}
		}
		cells = append(cells, line)
	}
	widths := make([]int, len(r.Columns))
	for _, line := range cells {
		for i, c := range line {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}

	bw := bufio.NewWriter(w)
	for n, line := range cells {
		writeTableLine(bw, line, widths)
		if n == 0 {
			sep := make([]string, len(widths))
			for i, wd := range widths {
				sep[i] = strings.Repeat("-", wd)
			}
			bw.WriteString(strings.Join(sep, "-+-"))
			bw.WriteByte('\n')
		}
	}
	fmt.Fprintf(bw, "(%s)\n", rowCount(len(r.Rows)))
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write result table: %w", err)
	}
	return nil
}

// writeTableLine writes one padded line; the last cell is not padded, so
// lines carry no trailing blanks.
func writeTableLine(bw *bufio.Writer, line []string, widths []int) {
	for i, c := range line {
		if i > 0 {
			bw.WriteString(" | ")
		}
		bw.WriteString(c)
		if i < len(line)-1 {
			bw.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
	}
	bw.WriteByte('\n')
}

// tableCell escapes control characters and invalid UTF-8 in s
// (EscapeTerminal) and cuts it to maxCellRunes.
func tableCell(s string) string {
	s = EscapeTerminal(s)
	if utf8.RuneCountInString(s) <= maxCellRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == maxCellRunes-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// escapeControls writes line breaks and tabs as \n, \r, \t and other control
// characters as \xNN or \uNNNN. Tool output lands in the table, and raw
// escape sequences in it would act on the auditor's terminal. Invisible
// format characters (Unicode's Cf: bidi overrides, zero-width characters,
// tag characters) are written as \uNNNN or \UNNNNNNNN too: shown raw, a
// right-to-left override makes a cell read other than what it holds, and
// the others hide text in what looks like plain words.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, hiddenRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xffff && hiddenRune(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		case hiddenRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hiddenRune reports the characters the audit outputs never show raw:
// control characters and invisible format characters (Cf).
func hiddenRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// cellText renders one value for the table and CSV outputs.
func cellText(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return v
	case []byte:
		return blobText(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(v)
	}
}

// blobText returns b as text when it is valid UTF-8, else as an SQL blob
// literal x'...' that can be pasted back into a query.
func blobText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return "x'" + hex.EncodeToString(b) + "'"
}

// WriteJSON writes r as a JSON array with one object per row, keys in column
// order, one row per line. BLOBs become strings as in WriteTable; floats
// that JSON cannot hold (NaN, ±Inf) become strings.
func (r *Result) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	keys := make([][]byte, len(r.Columns))
	for i, c := range r.Columns {
		k, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("write result json: %w", err)
		}
		keys[i] = k
	}
	bw.WriteString("[")
	for n, row := range r.Rows {
		if n > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n{")
		for i, k := range keys {
			if i > 0 {
				bw.WriteString(",")
			}
			var v any
			if i < len(row) {
				v = row[i]
			}
			b, err := json.Marshal(jsonValue(v))
			if err != nil {
				return fmt.Errorf("write result json: column %s: %w", r.Columns[i], err)
			}
			bw.Write(k)
			bw.WriteString(":")
			bw.Write(b)
		}
		bw.WriteString("}")
	}
	if len(r.Rows) > 0 {
		bw.WriteString("\n")
	}
	bw.WriteString("]\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write result json: %w", err)
	}
	return nil
}

// jsonValue maps a value to what WriteJSON marshals.
func jsonValue(v any) any {
	switch v := v.(type) {
	case []byte:
		return blobText(v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return v
}

// WriteCSV writes r as CSV (encoding/csv): a header line, then one record
// per row. NULL is written as an empty field, BLOBs as in WriteTable, and
// cells are neither escaped nor cut.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(r.Columns); err != nil {
		return fmt.Errorf("write result csv: %w", err)
	}
	rec := make([]string, len(r.Columns))
	for _, row := range r.Rows {
		for i := range rec {
			rec[i] = ""
			if i < len(row) && row[i] != nil {
				rec[i] = cellText(row[i])
			}
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write result csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write result csv: %w", err)
	}
	return nil
}

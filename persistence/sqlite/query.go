package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MaxQueryRows is the most rows QueryReadOnly returns; a query that produces
// more fails with ErrTooManyRows.
const MaxQueryRows = 100000

// readBusyTimeoutMs bounds how long a reader waits for a lock, in
// milliseconds. WAL readers normally take none; they wait only while the
// last writer connection is closing or recovering the WAL index.
const readBusyTimeoutMs = 5000

// Result holds the rows of one QueryReadOnly statement.
type Result struct {
	// Columns are the result column names, in statement order.
	Columns []string
	// Rows hold one value per column: nil for NULL, int64, float64,
	// string or []byte. The driver reads a zero-length BLOB as nil too;
	// select typeof(col) where the difference matters.
	Rows [][]any
	// Truncated is set by QueryLimited when it stopped at its Limits: the
	// statement had more rows than Rows holds.
	Truncated bool
}

// QueryReadOnly runs one SQL statement against the audit database at path
// and returns its rows. It opens its own read-only connection, so it works
// while a Store writes the same file, and never creates a missing file.
// Statements that try to write or to attach another database fail with an
// error wrapping ErrReadOnly; the refusal comes from SQLite, not from
// inspecting the SQL, except for the pragmas CheckPragma refuses (a journal
// mode change, a WAL checkpoint, any setting). A query producing more than
// MaxQueryRows rows fails with ErrTooManyRows.
func QueryReadOnly(ctx context.Context, path string, query string, args ...any) (*Result, error) {
	return queryReadOnly(ctx, path, Limits{}, true, query, args...)
}

// Limits bound what QueryLimited reads. The zero value is MaxQueryRows
// rows and no bound on bytes.
type Limits struct {
	// Rows is the most rows read; 0 means MaxQueryRows.
	Rows int
	// Bytes bounds the values read, counted as the length of text and
	// blobs plus 8 per number or NULL; 0 means no bound. The row that
	// crosses the bound is dropped.
	Bytes int64
	// ValueBytes bounds every string and blob the statement reads or makes
	// (SQLite's SQLITE_LIMIT_LENGTH on its connection): a larger one fails
	// the statement with SQLite's "string or blob too big" (IsTooBig). 0
	// means SQLite's own bound (1,000,000,000 bytes).
	ValueBytes int
	// TempInMemory keeps the statement's temporary tables, indexes and
	// sorts in memory (PRAGMA temp_store = MEMORY) rather than in files:
	// it writes nothing to disk, and what it holds is bounded as the
	// process's memory is.
	TempInMemory bool
}

// QueryLimited is QueryReadOnly for callers that show a page of a result
// (the node's HTTP API): it stops reading at lim and sets the Result's
// Truncated instead of failing. It runs through the same read-only
// connection, so writes are refused alike (ErrReadOnly).
func QueryLimited(ctx context.Context, path string, lim Limits, query string, args ...any) (*Result, error) {
	return queryReadOnly(ctx, path, lim, false, query, args...)
}

func queryReadOnly(ctx context.Context, path string, lim Limits, failBeyond bool, query string, args ...any) (*Result, error) {
	if lim.Rows <= 0 || lim.Rows > MaxQueryRows {
		lim.Rows = MaxQueryRows
	}
	res := &Result{Rows: [][]any{}}
	var size int64
	errStop := errors.New("stop")
	err := eachRow(ctx, path, lim, query, args, func(cols []string) error {
		res.Columns = cols
		return nil
	}, func(row []any) error {
		if len(res.Rows) == lim.Rows {
			if failBeyond {
				return fmt.Errorf("query audit database: %w: more than %d rows; narrow it with WHERE or LIMIT", ErrTooManyRows, lim.Rows)
			}
			res.Truncated = true
			return errStop
		}
		if lim.Bytes > 0 {
			if size += rowBytes(row); size > lim.Bytes {
				res.Truncated = true
				return errStop
			}
		}
		res.Rows = append(res.Rows, row)
		return nil
	})
	if err != nil && err != errStop {
		return nil, err
	}
	return res, nil
}

// QueryEach runs one SQL statement like QueryReadOnly (the same read-only
// connection and checks: writes fail with ErrReadOnly), but holds no rows:
// it calls columns once with the result's column names, then row for each
// row as SQLite produces it. Each row is a new slice, its values as in
// Result.Rows. Nothing bounds the rows: bound the time with ctx (a
// canceled ctx interrupts SQLite). An error returned by columns or row
// ends the query and is returned as is.
func QueryEach(ctx context.Context, path string, query string, args []any, columns func([]string) error, row func([]any) error) error {
	return eachRow(ctx, path, Limits{}, query, args, columns, row)
}

// IsTooBig reports whether err is SQLite's refusal of a string or blob
// over Limits.ValueBytes.
func IsTooBig(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_TOOBIG
}

func eachRow(ctx context.Context, path string, lim Limits, query string, args []any, columns func([]string) error, row func([]any) error) error {
	if err := checkOneStatement(query); err != nil {
		return fmt.Errorf("query audit database: %w", err)
	}
	if err := CheckPragma(query); err != nil {
		return fmt.Errorf("query audit database: %w", err)
	}
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return fmt.Errorf("query audit database: %w", err)
	}
	defer closeConn()
	if lim.ValueBytes > 0 {
		if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, lim.ValueBytes); err != nil {
			return fmt.Errorf("query audit database: bound value length: %w", err)
		}
	}
	if lim.TempInMemory {
		if _, err := conn.ExecContext(ctx, "PRAGMA temp_store = MEMORY"); err != nil {
			return fmt.Errorf("query audit database: temporary storage in memory: %w", err)
		}
	}

	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("query audit database: %w", classifyReadError(err))
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("read result columns: %w", err)
	}
	if err := columns(cols); err != nil {
		return err
	}
	for rows.Next() {
		r := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range r {
			ptrs[i] = &r[i]
		}
		// Scanning into *any copies []byte values out of the driver's
		// buffers, so rows stay valid after the connection closes.
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read result row: %w", err)
		}
		if err := row(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query audit database: %w", classifyReadError(err))
	}
	return nil
}

// rowBytes is what one row counts against Limits.Bytes.
func rowBytes(row []any) int64 {
	var n int64
	for _, v := range row {
		switch v := v.(type) {
		case string:
			n += int64(len(v))
		case []byte:
			n += int64(len(v))
		default:
			n += 8
		}
	}
	return n
}

// lockDown closes the one write path mode=ro leaves open, and checks that
// the connection really is read-only.
//
// ATTACH is not covered by mode=ro: SQLite opens attached files with the
// flags given to sqlite3_open_v2 (the driver passes READWRITE|CREATE), not
// with the URI's mode. Measured on modernc.org/sqlite v1.60.1 (SQLite
// 3.53.4), "ATTACH 'other.db'" on a mode=ro connection creates other.db, and
// after "PRAGMA query_only=0" (any statement may run it) tables can be
// created in it; "VACUUM INTO 'copy.db'" attaches internally and, even when
// query_only refuses it, leaves an empty copy.db behind. The driver offers
// no authorizer, but it exposes sqlite3_limit: SQLITE_LIMIT_ATTACHED = 0
// makes SQLite itself refuse every ATTACH (and so VACUUM INTO) with "too
// many attached databases - max 0". SQL cannot raise a limit again.
func lockDown(conn *sql.Conn) error {
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_ATTACHED, 0); err != nil {
		return fmt.Errorf("forbid attach: %w", err)
	}
	return conn.Raw(func(dc any) error {
		ro, ok := dc.(interface{ IsReadOnly(string) (bool, error) })
		if !ok {
			return fmt.Errorf("driver connection %T cannot report read-only mode", dc)
		}
		isRO, err := ro.IsReadOnly("main")
		if err != nil {
			return fmt.Errorf("check read-only mode: %w", err)
		}
		if !isRO {
			return errors.New("connection is not read-only")
		}
		return nil
	})
}

// classifyReadError marks the errors by which SQLite refuses a write on a
// QueryReadOnly connection with ErrReadOnly:
//   - SQLITE_READONLY (exactly; extended codes such as READONLY_RECOVERY
//     describe a reader that cannot open the WAL, not a refused write),
//   - SQLITE_IOERR_LOCK: on a file opened read-only the only lock that can
//     fail this way is the exclusive one a journal_mode change needs,
//   - the SQLITE_LIMIT_ATTACHED refusal of ATTACH and VACUUM INTO.
func classifyReadError(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch code := se.Code(); {
	case code == sqlite3.SQLITE_READONLY,
		code == sqlite3.SQLITE_IOERR_LOCK,
		code == sqlite3.SQLITE_ERROR && strings.Contains(se.Error(), "too many attached databases"):
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	return err
}

// readArgPragmas are the pragmas whose argument only names what to read
// (PRAGMA table_info(t), PRAGMA quick_check(10)): CheckPragma lets them
// take one.
var readArgPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true,
	"index_info": true, "index_xinfo": true, "index_list": true,
	"foreign_key_list": true, "foreign_key_check": true,
	"integrity_check": true, "quick_check": true,
}

// actingPragmas act even without an argument: a checkpoint writes the
// database file and truncates the WAL, optimize runs ANALYZE,
// incremental_vacuum frees pages.
var actingPragmas = map[string]bool{
	"wal_checkpoint": true, "optimize": true, "incremental_vacuum": true,
}

// CheckPragma reports an error wrapping ErrReadOnly when query, one SQL
// statement, is a PRAGMA (EXPLAIN or not: SQLite runs some pragmas while
// it prepares them) that does more than read: one given a value (PRAGMA
// journal_mode = DELETE, PRAGMA cache_size(10)), except those whose
// argument names what to read (table_info, index_list, integrity_check
// ...), and wal_checkpoint, optimize and incremental_vacuum with or
// without one.
//
// SQLite refuses most of these on a read-only connection, but not as
// read-only: a journal mode change fails with SQLITE_BUSY while a node
// writes the file, a checkpoint with a disk I/O error; and some it runs,
// changing the whole process rather than the database
// (temp_store_directory, hard_heap_limit, soft_heap_limit). Refusing every
// setting here is simpler than sorting them: the connection of one query
// has no use for one. Statements other than PRAGMA are left to SQLite.
func CheckPragma(query string) error {
	tk := pragmaTokens{q: query}
	word := strings.ToLower(tk.next())
	if word == "explain" {
		if word = strings.ToLower(tk.next()); word == "query" {
			tk.next() // PLAN
			word = strings.ToLower(tk.next())
		}
	}
	if word != "pragma" {
		return nil
	}
	name := tk.next()
	if tk.peek() == "." {
		tk.next()
		name = tk.next()
	}
	name = strings.ToLower(unquoteName(name))
	switch op := tk.next(); {
	case actingPragmas[name]:
		return fmt.Errorf("%w: PRAGMA %s changes the database file", ErrReadOnly, name)
	case (op == "=" || op == "(") && !readArgPragmas[name]:
		return fmt.Errorf("%w: PRAGMA %s with a value changes a setting; read it without one (PRAGMA %s)", ErrReadOnly, name, name)
	}
	return nil
}

// pragmaTokens splits the start of a statement into SQL tokens, enough for
// CheckPragma: words and quoted names whole, any other character alone;
// white space and comments are skipped. At the end next returns "".
type pragmaTokens struct {
	q string
	i int
}

func (t *pragmaTokens) peek() string {
	save := t.i
	tok := t.next()
	t.i = save
	return tok
}

func (t *pragmaTokens) next() string {
	q := t.q
	for t.i < len(q) {
		c := q[t.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			t.i++
		case c == '-' && t.i+1 < len(q) && q[t.i+1] == '-':
			t.i = skipPast(q, t.i+2, "\n")
		case c == '/' && t.i+1 < len(q) && q[t.i+1] == '*':
			t.i = skipPast(q, t.i+2, "*/")
		case c == '\'' || c == '"' || c == '`' || c == '[':
			end := string(c)
			if c == '[' {
				end = "]"
			}
			start := t.i
			t.i = start + 1
			for {
				t.i = skipPast(q, t.i, end)
				// A doubled quote is an escaped one, still inside.
				if end == "]" || t.i >= len(q) || q[t.i] != c {
					break
				}
				t.i++
			}
			return q[start:t.i]
		case isWordByte(c):
			start := t.i
			for t.i < len(q) && isWordByte(q[t.i]) {
				t.i++
			}
			return q[start:t.i]
		default:
			t.i++
			return string(c)
		}
	}
	return ""
}

// isWordByte reports a byte of an SQL keyword or bare name; bytes of
// UTF-8 sequences count, as in SQLite.
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// unquoteName returns a quoted name ("a""b", `a`, [a], 'a') as SQLite
// reads it; a bare name is returned as is.
func unquoteName(s string) string {
	if len(s) < 2 {
		return s
	}
	switch c := s[0]; c {
	case '"', '`', '\'':
		if s[len(s)-1] == c {
			return strings.ReplaceAll(s[1:len(s)-1], string([]byte{c, c}), string(c))
		}
	case '[':
		if s[len(s)-1] == ']' {
			return s[1 : len(s)-1]
		}
	}
	return s
}

// RowWriter prints a result as it is read (QueryEach): Columns once, Row
// for each row, then Close, which ends the output. After an error the
// output is left as it is (a prefix of the whole).
type RowWriter interface {
	Columns(cols []string) error
	Row(row []any) error
	Close() error
}

// NewCSVWriter returns a RowWriter that writes what Result.WriteCSV
// writes, row by row. With escape (for a terminal), every field, the
// header's too, has its control characters escaped as in WriteTable (\n,
// \x1b, \u009b) and invalid UTF-8 bytes written as \xNN, so that tool
// output cannot drive the terminal; without it the values are written
// exactly, for a file or a program.
func NewCSVWriter(w io.Writer, escape bool) RowWriter {
	return &csvRows{cw: csv.NewWriter(w), escape: escape}
}

type csvRows struct {
	cw     *csv.Writer
	escape bool
	rec    []string
}

func (c *csvRows) field(s string) string {
	if c.escape {
		return EscapeTerminal(s)
	}
	return s
}

func (c *csvRows) Columns(cols []string) error {
	c.rec = make([]string, len(cols))
	for i, col := range cols {
		c.rec[i] = c.field(col)
	}
	return c.write()
}

func (c *csvRows) Row(row []any) error {
	for i := range c.rec {
		c.rec[i] = ""
		if i < len(row) && row[i] != nil {
			c.rec[i] = c.field(cellText(row[i]))
		}
	}
	return c.write()
}

func (c *csvRows) write() error {
	if err := c.cw.Write(c.rec); err != nil {
		return fmt.Errorf("write result csv: %w", err)
	}
	return nil
}

func (c *csvRows) Close() error {
	c.cw.Flush()
	if err := c.cw.Error(); err != nil {
		return fmt.Errorf("write result csv: %w", err)
	}
	return nil
}

// EscapeTerminal is escapeControls that also writes each byte of invalid
// UTF-8 as \xNN: a lone 0x9b byte is CSI to a terminal not in UTF-8 mode.
// (What it writes for an invalid byte is ASCII, so escapeControls leaves it.)
// What it returns can neither drive a terminal nor read other than what s
// holds.
func EscapeTerminal(s string) string {
	if utf8.ValidString(s) {
		return escapeControls(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return escapeControls(b.String())
}

// NewJSONWriter returns a RowWriter that writes what Result.WriteJSON
// writes, row by row, except that DEL and the C1 control characters
// (U+0080 to U+009F) in strings are written as \u escapes too, as
// encoding/json already writes the other control characters: the same
// JSON value, harmless on a terminal.
func NewJSONWriter(w io.Writer) RowWriter {
	return &jsonRows{w: w}
}

type jsonRows struct {
	w    io.Writer
	keys [][]byte
	cols []string
	n    int
	buf  bytes.Buffer
}

func (j *jsonRows) Columns(cols []string) error {
	j.cols = cols
	j.keys = make([][]byte, len(cols))
	for i, c := range cols {
		k, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("write result json: %w", err)
		}
		j.keys[i] = escapeJSONControls(k)
	}
	_, err := io.WriteString(j.w, "[")
	return err
}

func (j *jsonRows) Row(row []any) error {
	j.buf.Reset()
	if j.n > 0 {
		j.buf.WriteString(",")
	}
	j.buf.WriteString("\n{")
	for i, k := range j.keys {
		if i > 0 {
			j.buf.WriteString(",")
		}
		var v any
		if i < len(row) {
			v = row[i]
		}
		b, err := json.Marshal(jsonValue(v))
		if err != nil {
			return fmt.Errorf("write result json: column %s: %w", j.cols[i], err)
		}
		j.buf.Write(k)
		j.buf.WriteString(":")
		j.buf.Write(escapeJSONControls(b))
	}
	j.buf.WriteString("}")
	j.n++
	if _, err := j.w.Write(j.buf.Bytes()); err != nil {
		return fmt.Errorf("write result json: %w", err)
	}
	return nil
}

func (j *jsonRows) Close() error {
	end := "]\n"
	if j.n > 0 {
		end = "\n]\n"
	}
	if _, err := io.WriteString(j.w, end); err != nil {
		return fmt.Errorf("write result json: %w", err)
	}
	return nil
}

// escapeJSONControls rewrites DEL, the UTF-8 encodings of U+0080 to
// U+009F and the invisible format characters (Cf, see escapeControls) in
// b, encoding/json output, as \u escapes (a pair of them past U+FFFF).
// Outside strings JSON holds none of them, so only strings change, and to
// the same value.
func escapeJSONControls(b []byte) []byte {
	if !bytes.ContainsFunc(b, jsonHidden) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case size > 1 && r > 0xffff && jsonHidden(r):
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		case jsonHidden(r) && !(r == utf8.RuneError && size == 1):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// jsonHidden reports the characters escapeJSONControls escapes; encoding/json
// escapes the C0 controls itself.
func jsonHidden(r rune) bool {
	return r == 0x7f || (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Cf, r)
}

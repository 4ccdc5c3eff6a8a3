package tomlconf

// MaxNesting is how deep a TOML file evoclaw reads (skill.toml,
// agent.toml, evoclaw.toml) may nest arrays and inline tables (a table
// header's brackets count too), and how many dots one key may have. The TOML parser's work grows with the square of either depth: a
// 1 MB file of 200 000 nested inline tables, or one key of 400 000 parts,
// took more than 10 minutes and 24 GB before it was refused.
const MaxNesting = 32

// TooDeep returns the 1-based line of the first bracket or brace of data
// nested deeper than MaxNesting, or of the first key with more than
// MaxNesting dots, or 0 when there is none. Dots are counted from the last
// separator (, = [ ] { } or a newline), so a number has at most one. It skips
// comments and the four kinds of TOML string, so brackets in text do not
// count; on a file that is not valid TOML its answer only has to be
// conservative, since the parser refuses such a file anyway.
func TooDeep(data []byte) int {
	depth, dots, line := 0, 0, 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '.':
			if dots++; dots > MaxNesting {
				return line
			}
		case ',', '=':
			dots = 0
		case '\n':
			line++
			dots = 0
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			var lines int
			i, lines = skipString(data, i)
			line += lines
		case '[', '{':
			if depth++; depth > MaxNesting {
				return line
			}
			dots = 0
		case ']', '}':
			depth = max(depth-1, 0)
			dots = 0
		}
	}
	return 0
}

// skipString returns the index of the last byte of the string that opens
// at data[i] (its closing quote, or the end of data) and the newlines in
// it. Basic strings (") have backslash escapes, literal ones (') do not;
// a tripled quote opens a multi-line string, the others end at a newline.
func skipString(data []byte, i int) (end, lines int) {
	q := data[i]
	multi := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	if multi {
		i += 2
	}
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '\n' && !multi:
			return i - 1, lines // unterminated: the newline is the caller's
		case c == '\n':
			lines++
		case c == '\\' && q == '"':
			if i+1 < len(data) && data[i+1] == '\n' {
				lines++
			}
			i++
		case c == q && !multi:
			return i, lines
		case c == q && i+2 < len(data) && data[i+1] == q && data[i+2] == q:
			// A closing ''' or """ may be followed by up to two more quotes
			// that belong to the string; the last three close it.
			for i+3 < len(data) && data[i+3] == q {
				i++
			}
			return i + 2, lines
		}
	}
	return len(data) - 1, lines
}

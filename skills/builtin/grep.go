package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Limits of grep.
const (
	// maxGrepLine is the longest line grep searches, in bytes without its
	// end of line. A longer one is skipped up to its end and counted in
	// the answer; the lines after it are searched.
	maxGrepLine = 1 << 20
	// maxShownLine is how much of a matching line grep shows.
	maxShownLine = 300
	// maxGrepPattern bounds the pattern's text, in bytes.
	maxGrepPattern = 4096
	// maxGrepProg bounds the pattern's compiled program, in instructions
	// (regexp/syntax after Simplify): a bounded repetition such as
	// [a-z]{1000} is one instruction per repeat, so a short pattern can
	// still compile to a program too large to run on any line.
	maxGrepProg = 2000
	// grepLineBudget bounds the work of one Match, in line bytes times
	// program instructions. Go's regexp runs in time linear in both, but
	// a Match cannot be interrupted: a call past its deadline overruns by
	// at most one Match, and holds its gate slot until then. In the worst
	// case (every instruction alive at every byte, e.g. [ab]{100}c
	// against a line of a's) a Match costs about 20-25 ns per byte and
	// instruction on a 2020s x86 server core (BenchmarkGrepLineBudget), so
	// 2^24 is about 0.4 s there and a few seconds on a Raspberry-Pi-class
	// CPU, past a file deadline of 10 s: the overrun stays a fraction of
	// the call. A longer line is not searched but counted, and the answer
	// says so: matching a prefix of it instead would report its missing
	// matches as absent without a trace. Typical patterns (10-30
	// instructions) search lines of 0.5-1.6 MB, so every line the reader
	// takes (at most 1 MiB) for the shorter ones; a pure literal has no
	// limit.
	grepLineBudget = 1 << 24
)

// NewGrep returns the grep tool: a regular expression (RE2 syntax, linear
// time) searched line by line in the text files under a path.
func NewGrep(o Options) (skills.GoTool, error) {
	o, err := o.withDefaults()
	if err != nil {
		return skills.GoTool{}, err
	}
	return skills.GoTool{
		Tool: skills.Tool{
			Name: "grep",
			Description: fmt.Sprintf("Search text files in the workspace for a regular expression (Go RE2 syntax). "+
				"Prints path:line: text for at most %d matches; skips binary files, .git and node_modules.", o.MaxResults),
			Parameters: params([]string{"pattern"},
				"pattern", skills.TypeString, "Regular expression to search for",
				"path", skills.TypeString, "File or directory to search (default: the workspace)",
				"glob", skills.TypeString, "Only files whose name matches this pattern, e.g. *.go",
				"ignore_case", skills.TypeBoolean, "Match case-insensitively (default false)"),
			Permissions: o.perms(skills.PermFileRead),
		},
		Run: o.guarded("grep", o.grep),
	}, nil
}

func (o Options) grep(ctx context.Context, args map[string]any) skills.Output {
	pat, glob := str(args, "pattern"), str(args, "glob")
	if boolean(args, "ignore_case") {
		pat = "(?i)" + pat
	}
	if len(pat) > maxGrepPattern {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("grep: pattern is %d bytes, longer than the limit of %d", len(pat), maxGrepPattern))
	}
	if len(glob) > maxGlobPattern {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("grep: glob is %d bytes, longer than the limit of %d", len(glob), maxGlobPattern))
	}
	m, err := newLineMatcher(pat)
	if err != nil {
		return skills.Failed(wire.ErrInvalidParams, "grep: "+err.Error())
	}
	if _, err := path.Match(glob, ""); err != nil {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("grep: bad glob %q: %v", glob, err))
	}
	p := cmpOr(str(args, "path"), ".")
	start, fail := o.path("grep", p)
	if fail != nil {
		return *fail
	}
	var lines []string
	full, refused := false, 0
	skipped, err := o.walk(ctx, start, func(name string, isDir bool) error {
		if isDir || (glob != "" && !matchBase(glob, name)) {
			return nil
		}
		var special bool
		full, special = o.grepFile(ctx, m, name, &lines)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if special {
			refused++
		}
		if full {
			return errStopWalk
		}
		return nil
	})
	if err != nil && !errors.Is(err, errWalkLimit) {
		return fileFailure(ctx, "grep", p, err)
	}
	h := &hits{list: lines, max: o.MaxResults, full: full}
	out := h.output("matches", err, skipped+refused)
	if m.unread > 0 {
		out.Content[0].Text += fmt.Sprintf("\n[%d %s longer than %d bytes %s not searched: grep reads lines of at most %d MiB; use bash to search %s]",
			m.unread, plural(m.unread, "line", "lines"), maxGrepLine, plural(m.unread, "was", "were"), maxGrepLine>>20, plural(m.unread, "it", "them"))
		out.Truncated = true
	}
	if m.tooLong > 0 {
		out.Content[0].Text += fmt.Sprintf("\n[%d %s longer than %d bytes %s not searched with this pattern "+
			"(it compiles to %d instructions; a line may cost at most %d bytes × instructions); use a simpler pattern to search them]",
			m.tooLong, plural(m.tooLong, "line", "lines"), m.maxLine, plural(m.tooLong, "was", "were"), m.prog, grepLineBudget)
		out.Truncated = true
	}
	return out
}

// lineMatcher is a grep pattern with the bound on one Match's work.
type lineMatcher struct {
	re      *regexp.Regexp
	prog    int      // instructions of the compiled pattern
	maxLine int      // longest line re may search
	literal []byte   // the whole pattern when it is a literal, else nil
	needs   [][]byte // one of these occurs in every match, if not empty
	tooLong int      // lines not searched because longer than maxLine
	unread  int      // lines not searched because longer than maxGrepLine
}

// newLineMatcher compiles pat, refusing it above maxGrepProg. Compiling
// a pattern of maxGrepPattern bytes takes at most a few hundred
// milliseconds (Go bounds repetitions), so it is measured before the
// regexp is built.
func newLineMatcher(pat string) (*lineMatcher, error) {
	tree, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("bad pattern: %v", err)
	}
	tree = tree.Simplify()
	prog, err := syntax.Compile(tree)
	if err != nil {
		return nil, fmt.Errorf("bad pattern: %v", err)
	}
	n := len(prog.Inst)
	lit, isLit := literal(tree)
	if n > maxGrepProg && !isLit {
		return nil, fmt.Errorf("pattern compiles to %d instructions, more than the limit of %d; use fewer or smaller repetitions", n, maxGrepProg)
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("bad pattern: %v", err)
	}
	m := &lineMatcher{re: re, prog: n, maxLine: grepLineBudget / n, needs: required(tree)}
	if len(m.needs) > maxNeeds {
		m.needs = nil // searching them all could cost more than the Match
	}
	if isLit {
		m.literal = lit
	}
	return m, nil
}

// match reports whether line matches. A line over the budget is counted
// in tooLong instead, unless it cannot match because it lacks every
// literal of needs: finding that, like searching a literal, is linear.
func (m *lineMatcher) match(line []byte) bool {
	switch {
	case m.literal != nil:
		return bytes.Contains(line, m.literal)
	case len(line) <= m.maxLine:
		return m.re.Match(line)
	case len(m.needs) > 0 && !slices.ContainsFunc(m.needs, func(lit []byte) bool { return bytes.Contains(line, lit) }):
		return false
	}
	m.tooLong++
	return false
}

// maxNeeds bounds the literals a line over the budget is searched for
// before it is counted as not searched.
const maxNeeds = 16

// literal returns the text re matches when re is a case-sensitive literal
// (without U+FFFD, which also matches invalid UTF-8).
func literal(re *syntax.Regexp) ([]byte, bool) {
	if re.Op != syntax.OpLiteral || re.Flags&syntax.FoldCase != 0 || slices.Contains(re.Rune, utf8.RuneError) {
		return nil, false
	}
	return []byte(string(re.Rune)), true
}

// required returns literals one of which occurs in every match of re, or
// nil when it finds none.
func required(re *syntax.Regexp) [][]byte {
	switch re.Op {
	case syntax.OpLiteral:
		if lit, ok := literal(re); ok {
			return [][]byte{lit}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpConcat: // any part's will do; take the longest shortest
		var best [][]byte
		for _, sub := range re.Sub {
			if r := required(sub); len(r) > 0 && (best == nil || shortest(r) > shortest(best)) {
				best = r
			}
		}
		return best
	case syntax.OpAlternate: // every branch must need one
		var all [][]byte
		for _, sub := range re.Sub {
			r := required(sub)
			if len(r) == 0 {
				return nil
			}
			all = append(all, r...)
		}
		return all
	}
	return nil
}

func shortest(lits [][]byte) int {
	n := len(lits[0])
	for _, l := range lits[1:] {
		n = min(n, len(l))
	}
	return n
}

// grepFile appends the matches in one file and reports whether the match
// limit was reached, and whether name was refused as a special file (a
// symlink to a FIFO). Files that cannot be opened or are binary are skipped.
// It stops at the first line after ctx is done, so a call overruns its
// deadline by at most one Match, which grepLineBudget bounds.
func (o Options) grepFile(ctx context.Context, m *lineMatcher, name string, lines *[]string) (full, special bool) {
	rc, _, err := o.Files.Open(ctx, name)
	if err != nil {
		return false, errors.Is(err, ErrNotRegular)
	}
	defer rc.Close() // read-only
	br := bufio.NewReaderSize(rc, 64<<10)
	if head, _ := br.Peek(sniffLen); bytes.IndexByte(head, 0) >= 0 {
		return false, false
	}
	m.unread += eachLine(ctx.Done(), br, maxGrepLine, func(n int, line []byte) bool {
		if !m.match(line) {
			return true
		}
		shown := line
		if len(shown) > maxShownLine {
			shown = append(trimPartialRune(shown[:maxShownLine:maxShownLine]), "…"...)
		}
		*lines = append(*lines, fmt.Sprintf("%s:%d: %s", name, n, shown))
		full = len(*lines) >= o.MaxResults
		return !full
	})
	return full, false
}

// eachLine calls fn with every line of br and its number, counting from 1,
// without its end of line ("\n" or "\r\n", as bufio.ScanLines gives it),
// until fn returns false, br ends or fails, or done is closed. A line
// longer than maxLine bytes is read to its end, in pieces, but not passed
// to fn: it is counted in the number returned. So a huge line costs at
// most maxLine bytes of memory, and neither it nor a file that grows
// without end can hold the call past done.
func eachLine(done <-chan struct{}, br *bufio.Reader, maxLine int, fn func(n int, line []byte) bool) (long int) {
	var pending []byte // the start of a line longer than br's buffer
	for n := 1; ; n++ {
		chunk, err := br.ReadSlice('\n')
		over := false
		for errors.Is(err, bufio.ErrBufferFull) {
			select {
			case <-done:
				return long
			default:
			}
			if !over && len(pending)+len(chunk) <= maxLine+2 { // +2: room for "\r\n"
				pending = append(pending, chunk...)
			} else {
				over, pending = true, pending[:0]
			}
			chunk, err = br.ReadSlice('\n')
		}
		select {
		case <-done:
			return long
		default:
		}
		if err != nil && !errors.Is(err, io.EOF) || len(chunk) == 0 && len(pending) == 0 && !over {
			return long // a read error, or the end after the last line
		}
		line := chunk
		if len(pending) > 0 {
			pending = append(pending, chunk...)
			line = pending
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case over || len(line) > maxLine:
			long++
		case !fn(n, line):
			return long
		}
		pending = pending[:0]
		if err != nil {
			return long
		}
	}
}

// matchBase matches glob against the last element of name.
func matchBase(glob, name string) bool {
	ok, _ := path.Match(glob, path.Base(name))
	return ok
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

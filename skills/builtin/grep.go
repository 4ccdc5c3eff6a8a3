package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"

	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/skills"
)

// Limits of grep.
const (
	// maxGrepLine is the longest line grep scans; a file with a longer line
	// is searched up to it.
	maxGrepLine = 1 << 20
	// maxShownLine is how much of a matching line grep shows.
	maxShownLine = 300
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
	re, err := regexp.Compile(pat)
	if err != nil {
		return skills.Failed(wire.ErrInvalidParams, fmt.Sprintf("grep: bad pattern: %v", err))
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
		full, special = o.grepFile(ctx, re, name, &lines)
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
	return h.output("matches", err, skipped+refused)
}

// grepFile appends the matches in one file and reports whether the match
// limit was reached, and whether name was refused as a special file (a
// symlink to a FIFO). Files that cannot be opened or are binary are skipped.
func (o Options) grepFile(ctx context.Context, re *regexp.Regexp, name string, lines *[]string) (full, special bool) {
	rc, _, err := o.Files.Open(ctx, name)
	if err != nil {
		return false, errors.Is(err, ErrNotRegular)
	}
	defer rc.Close() // read-only
	br := bufio.NewReader(rc)
	if head, _ := br.Peek(sniffLen); bytes.IndexByte(head, 0) >= 0 {
		return false, false
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxGrepLine)
	for n := 1; sc.Scan(); n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return false, false
		}
		line := sc.Bytes()
		if !re.Match(line) {
			continue
		}
		shown := line
		if len(shown) > maxShownLine {
			shown = append(trimPartialRune(shown[:maxShownLine:maxShownLine]), "…"...)
		}
		*lines = append(*lines, fmt.Sprintf("%s:%d: %s", name, n, shown))
		if len(*lines) >= o.MaxResults {
			return true, false
		}
	}
	return false, false
}

// matchBase matches glob against the last element of name.
func matchBase(glob, name string) bool {
	ok, _ := path.Match(glob, path.Base(name))
	return ok
}

package skills

import (
	"slices"
	"strconv"
	"strings"
)

// locate returns the 1-based line of data where the key at p is written,
// or where its nearest enclosing table or key is, or 0 when it cannot tell.
//
// The TOML decoder keeps key positions to itself, and keys under [[tools]]
// share one entry across all tools, so it cannot say which tool a position
// belongs to. locate reads the lines itself: table headers, [[tools]]
// counting and "key =" lines, skipping comments and multi-line strings. It
// is a locator, not a parser; the file has already parsed when it runs.
func locate(data []byte, p keyPath) int {
	var (
		best, bestLen int
		table         []string // segments of the current table header
		tool          = -1     // index of the current [[tools]] entry
		inString      string   // closing delimiter of an open multi-line string
	)
	consider := func(segs []string, line int) {
		if len(segs) == 0 || len(segs) > len(p.segs) || !slices.Equal(segs, p.segs[:len(segs)]) {
			return
		}
		// Inside [[tools]] only the wanted entry counts; a root-level
		// "tools = [...]" line is as near as a whole inline array gets.
		if p.tool >= 0 && segs[0] == "tools" && tool != p.tool && !(len(table) == 0 && len(segs) == 1) {
			return
		}
		if len(segs) > bestLen {
			best, bestLen = line, len(segs)
		}
	}
	for i, raw := range strings.Split(string(data), "\n") {
		line := i + 1
		if inString != "" {
			if strings.Contains(raw, inString) {
				inString = ""
			}
			continue
		}
		s := strings.TrimSpace(raw)
		switch {
		case s == "" || s[0] == '#':
		case strings.HasPrefix(s, "[["):
			segs, rest := splitKey(s[2:])
			if !strings.HasPrefix(rest, "]]") {
				continue
			}
			table = segs
			if slices.Equal(segs, []string{"tools"}) {
				tool++
			}
			consider(segs, line)
		case s[0] == '[':
			segs, rest := splitKey(s[1:])
			if !strings.HasPrefix(rest, "]") {
				continue
			}
			table = segs
			consider(segs, line)
		default:
			segs, rest := splitKey(s)
			if len(segs) == 0 || !strings.HasPrefix(rest, "=") {
				continue
			}
			consider(append(slices.Clip(table), segs...), line)
			inString = opensMultiline(rest[1:])
		}
	}
	return best
}

// splitKey reads a dotted TOML key (bare or quoted segments) from the start
// of s and returns its segments and the text after it.
func splitKey(s string) (segs []string, rest string) {
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return segs, s
		}
		var seg string
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return segs, s
			}
			u, err := strconv.Unquote(s[:end+1])
			if err != nil {
				u = s[1:end]
			}
			seg, s = u, s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return segs, s
			}
			seg, s = s[1:end+1], s[end+2:]
		default:
			end := 0
			for end < len(s) && isBareKey(s[end:end+1]) {
				end++
			}
			if end == 0 {
				return segs, s
			}
			seg, s = s[:end], s[end:]
		}
		segs = append(segs, seg)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return segs, s
		}
		s = s[1:]
	}
}

// opensMultiline returns the delimiter of a multi-line string that value
// opens and leaves open on its line, or "".
func opensMultiline(value string) string {
	v := strings.TrimSpace(value)
	for _, d := range []string{`"""`, `'''`} {
		if strings.HasPrefix(v, d) && strings.Count(v, d)%2 == 1 {
			return d
		}
	}
	return ""
}

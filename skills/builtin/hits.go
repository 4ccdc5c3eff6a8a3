package builtin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/skills"
)

// hits gathers what a search (find, glob, grep) found, up to max.
type hits struct {
	list []string
	max  int  // how many the search may return
	full bool // the search stopped at max
}

// addPath adds a path, a directory's with a trailing slash; it returns
// errStopWalk once the list is full.
func (h *hits) addPath(name string, isDir bool) error {
	if isDir {
		name += "/"
	}
	h.list = append(h.list, name)
	if len(h.list) >= h.max {
		h.full = true
		return errStopWalk
	}
	return nil
}

// output is the search's answer: its hits one a line, or "no matches",
// with a note when it stopped at max (what names the hits: "paths",
// "matches"), when its walk stopped at errWalkLimit (err, else nil), and
// of the special files it skipped.
func (h *hits) output(what string, err error, skipped int) skills.Output {
	text := strings.Join(h.list, "\n")
	switch {
	case len(h.list) == 0:
		text = "no matches"
	case h.full:
		text += fmt.Sprintf("\n[stopped at %d %s; narrow the pattern or the path]", h.max, what)
	}
	if errors.Is(err, errWalkLimit) {
		text += "\n[search stopped: " + err.Error() + "]"
	}
	text += skippedNote(skipped)
	return skills.Output{Content: []skills.Block{skills.TextBlock(text)}, Truncated: h.full || err != nil}
}

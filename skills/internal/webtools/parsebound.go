package webtools

import (
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The HTML5 tree builder that html.Parse implements creates more nodes
// than the page has tags: a formatting element (<b>, <i>, <font>, ...)
// that a block's end closed early stays "active", and every later block
// gets a fresh copy of each active one ("reconstruct the active
// formatting elements"). Elements that differ in an attribute are all
// kept, so 300 different <b class=N> followed by "<p>x" repeated made 300
// nodes per 4 bytes: 20 KB of page took 184 MiB and a second of CPU, and
// 2 MiB ended a real node with "fatal error: out of memory". Even without
// that, 2 MiB of "<p>x" is a million nodes (150 MiB).
//
// parseBound therefore reads the page with the tokenizer first (little
// memory, no tree) and counts what the tree builder can make of it at
// most: one node a token, plus, at each tag (where the builder may pop
// formatting elements off its stack, or copy them back), one for each
// formatting element still active, counted as the builder keeps them (at
// most three alike, one <a>), and two for elements the builder adds
// that the page left out. Only the part of the page within
// maxParseNodes is parsed: at most some 25 MiB of tree. An ordinary page
// closes its formatting elements and costs about three a token at most,
// so the Go spec (286 KB) and a 549 KB page of source are parsed whole, a
// 1.8 MB book up to 1.4 MB: each far past the 100 000 characters an
// answer shows.
const maxParseNodes = 150_000

// impliedNodes is how many elements the tree builder may add at a tag
// beyond the tag's own: those the page leaves out (a table's <tbody>, a
// <p> for a stray </p>, ...).
const impliedNodes = 2

// parseBound returns the length of the longest start of page, cut between
// tokens, whose estimate stays within maxParseNodes.
func parseBound(page string) int {
	z := html.NewTokenizer(strings.NewReader(page))
	var (
		nodes, at int
		active    []string // keys of the active formatting elements, oldest first
	)
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return len(page)
		}
		nodes++
		var name []byte
		if tt == html.StartTagToken || tt == html.EndTagToken || tt == html.SelfClosingTagToken {
			nodes += impliedNodes + len(active)
			var hasAttr bool
			name, hasAttr = z.TagName()
			if a := atom.Lookup(name); formatting(a) {
				switch tt {
				case html.StartTagToken:
					key := string(name)
					for hasAttr {
						var k, v []byte
						k, v, hasAttr = z.TagAttr()
						key += "\x00" + string(k) + "=" + string(v)
					}
					if a == atom.A { // a new <a> closes the one still open
						active = slices.DeleteFunc(active, func(k string) bool { return k == "a" || strings.HasPrefix(k, "a\x00") })
					}
					if i := thirdAlike(active, key); i >= 0 { // the builder keeps three alike
						active = slices.Delete(active, i, i+1)
					}
					active = append(active, key)
				case html.EndTagToken:
					for i := len(active) - 1; i >= 0; i-- {
						if k := active[i]; k == string(name) || strings.HasPrefix(k, string(name)+"\x00") {
							active = slices.Delete(active, i, i+1)
							break
						}
					}
				}
			}
		}
		if nodes > maxParseNodes {
			return at
		}
		at += len(z.Raw())
	}
}

// thirdAlike returns the index of the oldest of key in active when active
// holds it three times, else -1.
func thirdAlike(active []string, key string) int {
	first, n := -1, 0
	for i, k := range active {
		if k == key {
			if n++; first < 0 {
				first = i
			}
		}
	}
	if n >= 3 {
		return first
	}
	return -1
}

// formatting reports the HTML5 formatting elements, those the tree
// builder keeps in its list of active formatting elements.
func formatting(a atom.Atom) bool {
	switch a {
	case atom.A, atom.B, atom.Big, atom.Code, atom.Em, atom.Font, atom.I, atom.Nobr, atom.S,
		atom.Small, atom.Strike, atom.Strong, atom.Tt, atom.U:
		return true
	}
	return false
}

package webtools

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
)

// The HTML-to-Markdown converter's memory and time grow with its output,
// not its input, and its output can be far larger than the page: every
// link and image is made absolute against the page's URL (a 2 MiB page of
// <a href=x>y</a> under a 7 KB URL came to 20 GB allocated), and each
// line inside nested quotes and lists is prefixed once per level and
// copied once per level (2 MiB of <br> under 500 quotes ran for hours).
// toMarkdown therefore parses the page itself and hands the converter only
// the part of it that can be shown, bounded twice:
//
//   - shown: a lower bound of the Markdown the nodes kept so far produce,
//     in characters (visible text, the absolute URLs of links and
//     images). Once it passes maxChars the rest of the page could not be
//     returned anyway and is dropped.
//   - work: an upper estimate of the converter's work, in units of about
//     one output byte (a fixed cost per element, text, absolute URLs, line
//     prefixes), each multiplied by 1 + the quote and list nesting, since
//     each level copies its content. Once it passes workPerByte × the
//     page's bounded size the rest is dropped, even when little is shown:
//     the page is built to amplify.
//
// Quotes and lists deeper than maxNest are unwrapped into the level above,
// so the nesting factor stays small. A page cut either way is marked
// truncated.
const (
	// maxNest is the deepest quote and list nesting kept.
	maxNest = 8
	// elementWork is the work counted for any element, about what the
	// converter spends on an empty one relative to a byte of text.
	elementWork = 64
	// prefixWork is the work counted per nesting level for an element: a
	// line prefix ("> ", a list marker up to "0000000000000000001. ").
	prefixWork = 24
	// workPerByte bounds the work in units per byte of the bounded body.
	workPerByte = 2
)

// removed are the elements the converter drops with their content; their
// text is not shown.
var removed = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Link: true, atom.Meta: true,
	atom.Iframe: true, atom.Noscript: true, atom.Input: true, atom.Textarea: true,
}

// toMarkdown renders an HTML page as Markdown, relative links made
// absolute against base. Scripts, styles and other invisible elements are
// dropped by the converter. Only the start of the page that parses within
// maxParseNodes is parsed (parseBound), and only as much of it converted
// as can fill maxChars characters, and no more than workPerByte × maxBytes
// units of conversion work; cut reports that some of the page was dropped.
func toMarkdown(page, base string, maxChars, maxBytes int) (md string, cut bool, err error) {
	n := parseBound(page)
	doc, err := html.Parse(strings.NewReader(page[:n]))
	if err != nil {
		return "", false, err
	}
	b := bounder{maxShown: maxChars, maxWork: workPerByte * maxBytes}
	if u, err := url.Parse(base); err == nil && u.IsAbs() {
		b.base = u
	}
	b.walk(doc, 0)
	out, err := htmltomarkdown.ConvertNode(doc, converter.WithDomain(base))
	if err != nil {
		return "", false, err
	}
	return strings.ToValidUTF8(string(out), "\uFFFD"), b.full || n < len(page), nil
}

// bounder walks a parsed page in document order, counting what the
// converter will show and spend, and removes every node from the one that
// passes the work bound, or after the one that passes the shown bound.
type bounder struct {
	base              *url.URL
	shown, work       int
	maxShown, maxWork int
	full              bool
}

// fits counts a node, or reports false, with the page full, when its
// work would pass the bound: such a node is dropped. A node that passes
// the shown bound is kept, as it is shown in part.
func (b *bounder) fits(shown, work int) bool {
	if b.work+work > b.maxWork {
		b.full = true
		return false
	}
	b.shown += shown
	b.work += work
	if b.shown > b.maxShown {
		b.full = true
	}
	return true
}

// walk counts and bounds n's children; nest is n's quote and list depth.
func (b *bounder) walk(n *html.Node, nest int) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if b.full {
			n.RemoveChild(c)
			c = next
			continue
		}
		switch c.Type {
		case html.TextNode:
			if !b.fits(visibleRunes(c.Data), (len(c.Data)+1)*(1+nest)) {
				n.RemoveChild(c)
			}
		case html.ElementNode:
			if removed[c.DataAtom] && c.Namespace == "" {
				break
			}
			if nest >= maxNest && nests(c) {
				// Unwrap: c's children take its place and are walked next.
				next = c.FirstChild
				if next == nil {
					next = c.NextSibling
				}
				for k := c.FirstChild; k != nil; k = c.FirstChild {
					c.RemoveChild(k)
					n.InsertBefore(k, c)
				}
				n.RemoveChild(c)
				break
			}
			shown, work := b.urls(c)
			if !b.fits(shown, (elementWork+prefixWork*nest+work)*(1+nest)) {
				n.RemoveChild(c)
				break
			}
			inner := nest
			if c.DataAtom == atom.Blockquote || c.DataAtom == atom.Li {
				inner++
			}
			b.walk(c, inner)
		default:
			if !b.fits(0, elementWork) {
				n.RemoveChild(c)
				break
			}
			b.walk(c, nest)
		}
		c = next
	}
}

// urls is what an element's URL adds to the output: a link's or image's
// address, made absolute as the converter will. A link is rendered even
// without content or href ("[](base)").
func (b *bounder) urls(n *html.Node) (shown, work int) {
	var attr string
	switch {
	case n.Namespace != "":
		return 0, 0
	case n.DataAtom == atom.A:
		attr = "href"
	case n.DataAtom == atom.Img:
		attr = "src"
	default:
		return 0, 0
	}
	raw := ""
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == attr {
			raw = strings.TrimSpace(a.Val)
			break
		}
	}
	if raw == "" && n.DataAtom == atom.Img {
		return 0, 0 // not rendered
	}
	l := len(raw)
	if b.base != nil {
		// The converter resolves even an empty href, to the base.
		if u, err := url.Parse(raw); err == nil {
			l = max(l, len(b.base.ResolveReference(u).String()))
		}
	}
	return l, l
}

// nests reports an element that indents and copies its content per level.
func nests(n *html.Node) bool {
	if n.Namespace != "" {
		return false
	}
	switch n.DataAtom {
	case atom.Blockquote, atom.Ul, atom.Ol, atom.Li:
		return true
	}
	return false
}

// visibleRunes counts the characters of s that are not white space: a
// lower bound of what the converter shows of a text node.
func visibleRunes(s string) int {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if !unicode.IsSpace(r) {
			n++
		}
		s = s[size:]
	}
	return n
}

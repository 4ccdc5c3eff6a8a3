package skills

import (
	"strconv"
	"strings"
)

// keyPath names a key of a skill.toml: its dotted segments and, for keys
// under [[tools]], which tool (-1 otherwise).
type keyPath struct {
	tool int
	segs []string
}

// rootPath is the document itself.
var rootPath = keyPath{tool: -1}

// child returns the path of key inside p.
func (p keyPath) child(key string) keyPath {
	segs := make([]string, len(p.segs), len(p.segs)+1)
	copy(segs, p.segs)
	return keyPath{tool: p.tool, segs: append(segs, key)}
}

// toolPath returns the path of the i-th [[tools]] entry.
func toolPath(i int) keyPath { return keyPath{tool: i, segs: []string{"tools"}} }

// String renders the path as in error messages: tools[1].parameters.properties.zone.
func (p keyPath) String() string {
	var b strings.Builder
	for i, s := range p.segs {
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(s) {
			b.WriteString(s)
		} else {
			b.WriteString(strconv.Quote(s))
		}
		if i == 0 && p.tool >= 0 {
			b.WriteString("[" + strconv.Itoa(p.tool) + "]")
		}
	}
	return b.String()
}

// isBareKey reports whether s can be written unquoted in TOML.
func isBareKey(s string) bool {
	return s != "" && nameChars(s)
}

// keyErr is a problem at a key, before it is placed in a file.
type keyErr struct {
	at  keyPath
	msg string
}

package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// MaxToolNameLen is the longest tool name sent to a model. With the
// characters [A-Za-z0-9_-] it is the strictest rule of the APIs evoclaw
// speaks (OpenAI's is ^[a-zA-Z0-9_-]{1,64}$; Anthropic allows 128), so
// every provider accepts every name.
const MaxToolNameLen = 64

// toolNames maps the names of offered tools to names every provider
// accepts, and back. A valid name is sent as it is; any other (too long, or
// with characters such as '.' from an MCP server) is sent as its valid
// characters cut to fit, plus '_' and the start of the SHA-256 of the whole
// name, so it stays readable and two names never meet. The mapping depends
// only on the set of names offered.
type toolNames struct {
	fromModel map[string]string // model's name → offered name, only where they differ
}

// newToolNames returns the mapping for defs and defs renamed for the model.
func newToolNames(defs []llm.ToolDef) (*toolNames, []llm.ToolDef) {
	n := &toolNames{fromModel: map[string]string{}}
	if len(defs) == 0 || allValidOnce(defs) {
		// The common case: every name goes to the model as it is.
		return n, defs
	}
	// Valid names keep themselves; the others are assigned in name order,
	// so the result does not depend on the order of defs.
	order := make([]int, len(defs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		va, vb := validToolName(defs[order[a]].Name), validToolName(defs[order[b]].Name)
		if va != vb {
			return va
		}
		return defs[order[a]].Name < defs[order[b]].Name
	})
	taken := make(map[string]bool, len(defs))
	out := make([]llm.ToolDef, len(defs))
	for _, i := range order {
		d := defs[i]
		name := d.Name
		if !validToolName(name) || taken[name] {
			for k := 8; ; k += 8 {
				name = aliasToolName(d.Name, k)
				if !taken[name] || k >= sha256.Size*2 {
					break
				}
			}
			n.fromModel[name] = d.Name
		}
		taken[name] = true
		d.Name = name
		out[i] = d
	}
	return n, out
}

// allValidOnce says whether every name of defs is valid and offered
// once: then none is renamed.
func allValidOnce(defs []llm.ToolDef) bool {
	seen := make(map[string]struct{}, len(defs))
	for _, d := range defs {
		if !validToolName(d.Name) {
			return false
		}
		if _, dup := seen[d.Name]; dup {
			return false
		}
		seen[d.Name] = struct{}{}
	}
	return true
}

// original is the offered name behind a name the model used; a name the
// mapping does not know is returned as it is.
func (n *toolNames) original(name string) string {
	if n != nil {
		if o, ok := n.fromModel[name]; ok {
			return o
		}
	}
	return name
}

// validToolName reports whether name satisfies every provider's rule.
func validToolName(name string) bool {
	if name == "" || len(name) > MaxToolNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !toolNameByte(name[i]) {
			return false
		}
	}
	return true
}

func toolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// aliasToolName is name's valid characters ('_' for others), cut so that
// '_' and the first hexLen hex digits of its SHA-256 fit MaxToolNameLen.
func aliasToolName(name string, hexLen int) string {
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:])[:min(hexLen, sha256.Size*2)]
	b := make([]byte, 0, MaxToolNameLen)
	for i := 0; i < len(name) && len(b) < MaxToolNameLen-1-len(h); i++ {
		c := name[i]
		if !toolNameByte(c) {
			c = '_'
		}
		b = append(b, c)
	}
	return string(append(append(b, '_'), h...))
}

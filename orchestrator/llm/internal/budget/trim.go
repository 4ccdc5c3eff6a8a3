package budget

import (
	"fmt"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// MinResult is the least a cut tool result keeps, in bytes.
const MinResult = 256

// maxDescription bounds a shortened tool description, in bytes.
const maxDescription = 120

// dropHistory drops whole exchanges from the front of msgs until fits
// reports true or only the current turn (the latest user message and what
// follows) is left. System messages stay. It returns the messages and how
// many were dropped.
func dropHistory(msgs []llm.Message, fits func([]llm.Message) bool) ([]llm.Message, int) {
	current := len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			current = i
			break
		}
	}
	if current == len(msgs) {
		// No user message: everything is the current turn.
		return msgs, 0
	}
	// Exchange boundaries: every user message before the current one.
	var starts []int
	for i := 0; i < current; i++ {
		if msgs[i].Role == llm.RoleUser || i == 0 {
			starts = append(starts, i)
		}
	}
	starts = append(starts, current)
	if fits(msgs) {
		return msgs, 0
	}
	for k := 1; k < len(starts); k++ {
		cut := starts[k]
		var kept []llm.Message
		dropped := 0
		for _, m := range msgs[:cut] {
			if m.Role == llm.RoleSystem {
				kept = append(kept, m)
			} else {
				dropped++
			}
		}
		kept = append(kept, msgs[cut:]...)
		if fits(kept) || k == len(starts)-1 {
			return kept, dropped
		}
	}
	return msgs, 0
}

// dropImages replaces the images of msgs by notes, oldest message first,
// until fits reports true or none is left. It returns the messages (copied
// when changed) and how many images it replaced.
func dropImages(msgs []llm.Message, fits func([]llm.Message) bool) ([]llm.Message, int) {
	var out []llm.Message
	dropped := 0
	for i, m := range msgs {
		if !m.HasImages() {
			continue
		}
		if fits(msgs) {
			break
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
			msgs = out
		}
		var notes []string
		for _, p := range m.Parts {
			if p.Type == llm.PartImage {
				notes = append(notes, llm.ImageNote(p, "left out to fit the model's context window"))
			}
		}
		out[i] = llm.WithoutImages(m, notes...)
		dropped += len(notes)
	}
	return msgs, dropped
}

// shortenTools returns copies of tools with descriptions cut to their
// first sentence (all of them dropped when drop is set) and the
// descriptions inside parameter schemas removed.
func shortenTools(tools []llm.ToolDef, drop bool) []llm.ToolDef {
	out := make([]llm.ToolDef, len(tools))
	for i, t := range tools {
		t.Description = firstSentence(t.Description)
		if drop {
			t.Description = ""
		}
		if t.Parameters != nil {
			t.Parameters, _ = stripDescriptions(t.Parameters).(map[string]any)
		}
		out[i] = t
	}
	return out
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ".\n"); i >= 0 {
		s = s[:i+1]
	}
	return llm.Excerpt(s, maxDescription)
}

// stripDescriptions copies a JSON schema without its "description" keys
// (property names called description are kept: only a description whose
// value is a string is schema prose).
func stripDescriptions(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			if _, isText := val.(string); k == "description" && isText {
				continue
			}
			m[k] = stripDescriptions(val)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, val := range x {
			s[i] = stripDescriptions(val)
		}
		return s
	}
	return v
}

// cutResults shortens tool results after the latest user message, longest
// first, by about excess bytes in all, none below MinResult. It returns the
// messages (copied when changed) and how many results it cut.
func cutResults(msgs []llm.Message, excess int) ([]llm.Message, int) {
	current := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			current = i
			break
		}
	}
	out := append([]llm.Message(nil), msgs...)
	cut := map[int]bool{}
	for excess > 0 {
		longest := -1
		for i := current; i < len(out); i++ {
			if out[i].Role == llm.RoleTool && !cut[i] && len(out[i].Content) > MinResult+64 && (longest < 0 || len(out[i].Content) > len(out[longest].Content)) {
				longest = i
			}
		}
		if longest < 0 {
			break
		}
		c := out[longest].Content
		keep := max(MinResult, len(c)-excess-64)
		// Cut on a rune boundary.
		for keep > 0 && keep < len(c) && c[keep]&0xC0 == 0x80 {
			keep--
		}
		removed := len(c) - keep
		out[longest].Content = c[:keep] + fmt.Sprintf("\n[… %d bytes cut to fit the model's context window]", removed)
		excess -= removed - 64
		cut[longest] = true
	}
	if len(cut) == 0 {
		return msgs, 0
	}
	return out, len(cut)
}

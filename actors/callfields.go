package actors

import (
	"crypto/sha256"
	"fmt"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// MaxCallFieldBytes bounds the name and the id of a tool call as the model
// wrote them. Tool names are at most some 120 bytes (AGENT__TOOL); a
// longer name or id is replaced, in the model's message itself, by its
// start, its length and a hash (cutCallField), so that the history, the
// audit row, the progress events and the answer quote no more than that.
// A name so cut names no tool: the call is answered not_found. Before, a
// 1 MB name was kept four times (the model's message, the tool message,
// the audit row's tool and its error).
const MaxCallFieldBytes = 256

// boundAnswer cuts the names and ids of the answer's tool calls, and the
// model name the server reported (kept in every llm_calls row), past
// MaxCallFieldBytes. Two ids that differ stay different (the hash).
func boundAnswer(resp *llm.Response) {
	resp.Model = cutCallField(resp.Model)
	for i := range resp.Message.ToolCalls {
		c := &resp.Message.ToolCalls[i]
		c.Name, c.ID = cutCallField(c.Name), cutCallField(c.ID)
	}
}

// cutCallField is s, or when longer than MaxCallFieldBytes its first 64
// bytes, its length and the start of its SHA-256.
func cutCallField(s string) string {
	if len(s) <= MaxCallFieldBytes {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s(%d bytes, sha256 %x)", truncate(s, 64), len(s), sum[:8])
}

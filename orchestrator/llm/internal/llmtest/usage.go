package llmtest

import (
	"fmt"

	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// UsageCase is a usage report a server may send, as the JSON of the
// "usage" field, and the usage it must give.
type UsageCase struct {
	Name  string
	Usage string
	Want  llm.Usage
}

// UsageCases are usage reports of odd shapes, with in and out the API's
// names of the input and output counts: a whole count is taken however it
// is written, anything else counts as not reported, and none may fail the
// answer it comes with.
func UsageCases(in, out string) []UsageCase {
	u := func(a, b string) string { return fmt.Sprintf(`{%q:%s,%q:%s}`, in, a, out, b) }
	return []UsageCase{
		{"integers", u(`12`, `3`), llm.Usage{InputTokens: 12, OutputTokens: 3}},
		{"whole floats", u(`12.0`, `3e0`), llm.Usage{InputTokens: 12, OutputTokens: 3}},
		{"strings", u(`"12"`, `"3"`), llm.Usage{InputTokens: 12, OutputTokens: 3}},
		{"beyond int64", u(`99999999999999999999`, `1e30`), llm.Usage{}},
		{"fraction and negative", u(`12.5`, `-3`), llm.Usage{}},
		{"other types", u(`true`, `{"n":3}`), llm.Usage{}},
		{"not an object", `[12,3]`, llm.Usage{}},
		{"text", `"n/a"`, llm.Usage{}},
	}
}

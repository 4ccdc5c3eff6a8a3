package auditchain

// Table describes one chained table: its name and the columns a record's
// hash covers, in hashing order. Every chained table also has the columns
// chain_seq (covered, last) and hash (the stored hash, not covered).
type Table struct {
	Name    string   // table name
	Columns []string // hashed columns, chain_seq last
	// Optional are the columns of Columns added after the table was first
	// chained. A record's hash covers such a column only when its value is
	// not NULL (see HashedValues): rows written before the column existed
	// keep their hash, and a row that has a value cannot lose it, or an old
	// row gain one, without its hash changing.
	Optional []string
}

// HashedValues returns the values a record's hash covers, given vals, the
// values of all of t's Columns in order: vals without the Optional columns
// that are NULL.
func (t Table) HashedValues(vals []any) []any {
	if len(t.Optional) == 0 || len(vals) != len(t.Columns) {
		return vals
	}
	out := make([]any, 0, len(vals))
	for i, v := range vals {
		if v == nil && t.optional(t.Columns[i]) {
			continue
		}
		out = append(out, v)
	}
	return out
}

func (t Table) optional(col string) bool {
	for _, c := range t.Optional {
		if c == col {
			return true
		}
	}
	return false
}

// Chained column names shared by every chained table.
const (
	ColRecordID = "record_id"
	ColChainSeq = "chain_seq"
	ColHash     = "hash"
	// ColAgentElapsedMs is the tool_calls column, added later, with the
	// elapsed time an edge agent reported beside the one the writer
	// observed.
	ColAgentElapsedMs = "agent_elapsed_ms"
)

// Tables are the chained tables of the audit schema. The column lists are
// part of the hash format: a column added to a table later goes just
// before chain_seq and into Optional, so the hash of every row written
// before it stays what it was.
var Tables = []Table{
	{Name: "tool_calls", Columns: []string{
		"record_id", "ts", "ts_ms", "node", "side", "conversation_id", "request_id", "call_id", "agent_id",
		"tool", "params", "status", "error_type", "error", "exit_code", "elapsed_ms", "result_excerpt", "result_bytes",
		ColAgentElapsedMs, // warm schema v8, cold schema v2
		ColChainSeq,
	}, Optional: []string{ColAgentElapsedMs}},
	{Name: "llm_calls", Columns: []string{
		"record_id", "ts", "ts_ms", "node", "conversation_id", "provider", "model",
		"input_tokens", "output_tokens", "latency_ms", "status", "error_type", "error", "iteration",
		ColChainSeq,
	}},
	{Name: "messages", Columns: []string{
		"record_id", "conversation_id", "seq", "ts", "ts_ms", "role", "body",
		ColChainSeq,
	}},
	{Name: "events", Columns: []string{
		"record_id", "ts", "ts_ms", "node", "agent_id", "kind", "detail",
		ColChainSeq,
	}},
}

// TableByName returns the chained table called name.
func TableByName(name string) (Table, bool) {
	for _, t := range Tables {
		if t.Name == name {
			return t, true
		}
	}
	return Table{}, false
}

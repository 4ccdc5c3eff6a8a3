package auditchain

// Table describes one chained table: its name and the columns a record's
// hash covers, in hashing order. Every chained table also has the columns
// chain_seq (covered, last) and hash (the stored hash, not covered).
type Table struct {
	Name    string   // table name
	Columns []string // hashed columns, chain_seq last
}

// Chained column names shared by every chained table.
const (
	ColRecordID = "record_id"
	ColChainSeq = "chain_seq"
	ColHash     = "hash"
)

// Tables are the chained tables of the audit schema. The column lists are
// part of the hash format: a column added to a table later is appended to
// its list only with a new hash version.
var Tables = []Table{
	{Name: "tool_calls", Columns: []string{
		"record_id", "ts", "ts_ms", "node", "side", "conversation_id", "request_id", "call_id", "agent_id",
		"tool", "params", "status", "error_type", "error", "exit_code", "elapsed_ms", "result_excerpt", "result_bytes",
		ColChainSeq,
	}},
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

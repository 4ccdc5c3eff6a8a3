package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/hot"
)

// column returns the value of column name in r (by the table's column
// order), nil when absent.
func column(r auditchain.Record, name string) any {
	t, ok := auditchain.TableByName(r.Table)
	if !ok {
		return nil
	}
	if i := slices.Index(t.Columns, name); i >= 0 && i < len(r.Values) {
		return r.Values[i]
	}
	return nil
}

func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// EntryOf returns the display form of a chained record.
func EntryOf(r auditchain.Record) hot.Entry {
	e := hot.Entry{
		Seq: r.Seq, Node: text(column(r, "node")), AgentID: text(column(r, "agent_id")),
		ConversationID: text(column(r, "conversation_id")), Status: text(column(r, "status")),
	}
	e.Time, _ = time.Parse(time.RFC3339Nano, text(column(r, "ts")))
	var detail []string
	add := func(format string, v any) {
		if s := text(v); s != "" {
			detail = append(detail, fmt.Sprintf(format, s))
		}
	}
	switch r.Table {
	case "tool_calls":
		e.Kind, e.Name = hot.KindTool, text(column(r, "tool"))
		add("%sms", column(r, "elapsed_ms"))
		add("exit=%s", column(r, "exit_code"))
		add("request=%s", column(r, "request_id"))
		add("error_type=%s", column(r, "error_type"))
		add("error=%q", column(r, "error"))
	case "llm_calls":
		e.Kind, e.Name = hot.KindLLM, strings.TrimSuffix(text(column(r, "provider"))+"/"+text(column(r, "model")), "/")
		add("%sms", column(r, "latency_ms"))
		add("in=%s", column(r, "input_tokens"))
		add("out=%s", column(r, "output_tokens"))
		add("iteration=%s", column(r, "iteration"))
		add("error_type=%s", column(r, "error_type"))
		add("error=%q", column(r, "error"))
	case "messages":
		e.Kind, e.Name = hot.KindMessage, text(column(r, "role"))
		add("seq=%s", column(r, "seq"))
		body := text(column(r, "body"))
		if len(body) > 120 {
			body = body[:120] + "..."
		}
		add("%s", body)
	case "events":
		e.Kind, e.Name = hot.KindEvent, text(column(r, "kind"))
		add("%s", column(r, "detail"))
	}
	e.Detail = strings.Join(detail, " ")
	return e
}

// logWindow is how many chain_seq numbers RecentEntries reads at a time
// while walking back from the head.
const logWindow = 2000

// RecentEntries returns, oldest first, the newest limit records of the audit
// database at path that match f (all of them when limit <= 0), and the
// newest chain_seq in the database, to follow from with EntriesAfter.
func RecentEntries(ctx context.Context, path string, f hot.Filter, limit int) ([]hot.Entry, int64, error) {
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return nil, 0, fmt.Errorf("read audit log: %w", err)
	}
	defer closeConn()
	head, err := auditchain.MaxSeq(ctx, conn, auditchain.Filter{})
	if err != nil {
		return nil, 0, fmt.Errorf("read audit log: %w", err)
	}
	var out []hot.Entry // newest first while collecting
	for hi := head; hi > 0 && (limit <= 0 || len(out) < limit); {
		recs, lo, err := auditchain.ReadNewestAtMost(ctx, conn, auditchain.Filter{}, max(hi-logWindow, 0), hi, auditchain.MaxWindowBytes)
		if err != nil {
			return nil, 0, fmt.Errorf("read audit log: %w", err)
		}
		hi = lo // the loop ends at 0
		for i := len(recs) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
			if e := EntryOf(recs[i]); f.Match(e) {
				out = append(out, e)
			}
		}
	}
	slices.Reverse(out)
	return out, head, nil
}

// EntriesAfter returns, oldest first, the records of the audit database at
// path with chain_seq > after that match f, and the newest chain_seq seen.
func EntriesAfter(ctx context.Context, path string, after int64, f hot.Filter) ([]hot.Entry, int64, error) {
	conn, closeConn, err := openReadOnly(ctx, path)
	if err != nil {
		return nil, after, fmt.Errorf("read audit log: %w", err)
	}
	defer closeConn()
	recs, _, err := auditchain.ReadWindowAtMost(ctx, conn, auditchain.Filter{}, after, after+logWindow, auditchain.MaxWindowBytes)
	if err != nil {
		return nil, after, fmt.Errorf("read audit log: %w", err)
	}
	var out []hot.Entry
	for _, r := range recs {
		after = max(after, r.Seq)
		if e := EntryOf(r); f.Match(e) {
			out = append(out, e)
		}
	}
	return out, after, nil
}

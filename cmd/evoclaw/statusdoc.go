package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// statusDoc is GET /v1/status as `evoclaw status` reads it. It is decoded
// tolerantly, apart from the orchestrator's types: every field may be
// absent, and a node that knows more or less than this client still shows
// what both know.
//
// Field mapping: this struct is the one place that names the JSON keys.
// Sections marked "newer" come from nodes after the status API grew; they
// are read as generic objects and printed key by key, so a renamed key
// shows up under its new name instead of disappearing.
type statusDoc struct {
	NodeID  string        `json:"node_id"`
	Broker  string        `json:"broker"`
	Agents  []agentStatus `json:"agents"`
	Metrics struct {
		// Tools are the node's counters per LLM-facing tool name
		// ("agent__tool"), the source of --tools for nodes that do not
		// send per-agent stats.
		Tools map[string]toolStats `json:"Tools"`
	} `json:"metrics"`
	Audit auditStatus `json:"audit"`

	// Ready is newer: true, false, or an object {"ready": bool, "reason": ...}.
	Ready json.RawMessage `json:"ready"`
	// LLM is newer: the model links, with their cool-downs.
	LLM []map[string]any `json:"llm"`
	// BrokerClients is newer: the clients connected to the embedded broker.
	BrokerClients []map[string]any `json:"broker_clients"`
}

// agentStatus is one edge agent.
type agentStatus struct {
	ID           string    `json:"id"`
	Online       bool      `json:"online"`
	Capabilities string    `json:"capabilities"`
	LastSeen     time.Time `json:"last_seen"`
	// Tools are names, or (newer) objects with their own stats.
	Tools []agentTool `json:"tools"`
	// ToolStats is newer: stats by tool name when Tools holds names.
	ToolStats map[string]toolStats `json:"tool_stats"`
}

// agentTool is one tool of an agent: a name, or an object with a name and
// maybe stats.
type agentTool struct {
	Name  string
	Stats *toolStats
}

// UnmarshalJSON takes "name" or {"name": ..., "calls": ...}.
func (t *agentTool) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &t.Name); err == nil {
		return nil
	}
	var obj struct {
		Name string `json:"name"`
		toolStats
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	t.Name = obj.Name
	if obj.toolStats != (toolStats{}) {
		s := obj.toolStats
		t.Stats = &s
	}
	return nil
}

// toolStats are a tool's counters as actors.ToolStats sends them (Go
// names) or in snake_case; JSON keys match case-insensitively.
type toolStats struct {
	Calls        int64   `json:"Calls"`
	Errors       int64   `json:"Errors"`
	Timeouts     int64   `json:"Timeouts"`
	TotalMs      int64   `json:"TotalMs"`
	MaxMs        int64   `json:"MaxMs"`
	TotalMsSnake int64   `json:"total_ms"`
	MaxMsSnake   int64   `json:"max_ms"`
	AvgMsSnake   float64 `json:"avg_ms"`
}

// avg is the mean latency in milliseconds.
func (t toolStats) avg() float64 {
	switch {
	case t.AvgMsSnake > 0:
		return t.AvgMsSnake
	case t.Calls == 0:
		return 0
	}
	return float64(max(t.TotalMs, t.TotalMsSnake)) / float64(t.Calls)
}

// maxMs is the slowest call in milliseconds.
func (t toolStats) maxMs() int64 { return max(t.MaxMs, t.MaxMsSnake) }

// auditStatus is tiers.Status (Go names on the wire).
type auditStatus struct {
	Retention *struct {
		LastRun      time.Time
		LastDeleted  int64
		TotalDeleted int64
		ChainStart   int64
		LastReason   string
		LastError    string
	}
	Cold *struct {
		ShippedSeq, HeadSeq, Lag int64
		LastShip                 time.Time
		LastError                string
		Failures                 int
	}
}

// readiness reads the Ready field: ok, and why not.
func (d *statusDoc) readiness() (known, ok bool, reason string) {
	if len(d.Ready) == 0 || string(d.Ready) == "null" {
		return false, false, ""
	}
	if json.Unmarshal(d.Ready, &ok) == nil {
		return true, ok, ""
	}
	var obj struct {
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(d.Ready, &obj) == nil {
		return true, obj.Ready, obj.Reason
	}
	return false, false, ""
}

// toolStatsOf returns the stats of an agent's tool, from wherever the node
// put them.
func (d *statusDoc) toolStatsOf(a agentStatus, t agentTool) (toolStats, bool) {
	if t.Stats != nil {
		return *t.Stats, true
	}
	if s, ok := a.ToolStats[t.Name]; ok {
		return s, true
	}
	s, ok := d.Metrics.Tools[a.ID+"__"+t.Name]
	return s, ok
}

// objectLine prints a generic object as "first k=v k=v ...": the keys in
// lead first (the first found is shown bare), then the rest sorted. Values
// are made safe for a terminal.
func objectLine(m map[string]any, lead ...string) string {
	var parts []string
	seen := map[string]bool{}
	for i, k := range lead {
		v, ok := m[k]
		if !ok || v == nil {
			continue
		}
		seen[k] = true
		if i == 0 || len(parts) == 0 {
			parts = append(parts, scalar(v))
		} else {
			parts = append(parts, k+"="+scalar(v))
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		if v := m[k]; v != nil && v != "" {
			parts = append(parts, k+"="+scalar(v))
		}
	}
	return termLine(strings.Join(parts, " "), maxProgressLine)
}

// scalar formats a JSON value short; times become relative.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return ago(t, time.Now())
		}
		return v
	case float64:
		return fmt.Sprint(v)
	case map[string]any, []any:
		b, _ := json.Marshal(v) // it came from JSON
		return string(b)
	}
	return fmt.Sprint(v)
}

// ago says how long before now t was: "3s ago", "in 20s", "never".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	if d := now.Sub(t); d >= 0 {
		return short(d) + " ago"
	}
	return "in " + short(t.Sub(now))
}

// short writes d in its largest unit: 3s, 5m, 2h, 4d.
func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

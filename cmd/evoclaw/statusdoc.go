package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/orchestrator"
)

// statusDoc is GET /v1/status as `evoclaw status` reads it: the node's own
// orchestrator.Status, and which of its sections the node sent, so that a
// node older than this client shows what it has and nothing it lacks.
type statusDoc struct {
	orchestrator.Status
	sent map[string]bool
}

// UnmarshalJSON decodes the status and notes its top-level keys.
func (d *statusDoc) UnmarshalJSON(b []byte) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &d.Status); err != nil {
		return err
	}
	d.sent = make(map[string]bool, len(keys))
	for k := range keys {
		d.sent[k] = true
	}
	return nil
}

// readiness says whether the node is ready and, if not, why.
func (d *statusDoc) readiness() (known, ok bool, reason string) {
	if !d.sent["ready"] {
		return false, false, ""
	}
	var why []string
	for _, c := range d.Ready.Checks {
		if !c.OK {
			why = append(why, c.Name+": "+c.Reason)
		}
	}
	return true, d.Ready.Ready, strings.Join(why, "; ")
}

// auditReady reports whether the node sent its readiness and its audit
// check passed.
func (d *statusDoc) auditReady() bool {
	if !d.sent["ready"] {
		return false
	}
	for _, c := range d.Ready.Checks {
		if c.Name == orchestrator.CheckAudit {
			return c.OK
		}
	}
	return false
}

// toolStatsOf returns the counters of an agent's tool i: the node's
// per-agent stats, else its loop metrics under the model's name.
func (d *statusDoc) toolStatsOf(a orchestrator.AgentStatus, i int) (orchestrator.ToolStatus, bool) {
	if i < len(a.ToolStats) && a.ToolStats[i].Name == a.Tools[i] {
		s := a.ToolStats[i]
		return s, s.Calls > 0
	}
	m, ok := d.Metrics.Tools[a.ID+actors.ToolSep+a.Tools[i]]
	if !ok {
		return orchestrator.ToolStatus{}, false
	}
	return orchestrator.ToolStatus{Name: a.Tools[i], Calls: m.Calls, Errors: m.Errors, Timeouts: m.Timeouts, AvgMs: m.AvgMs(),
		MaxMs: m.MaxMs}, m.Calls > 0
}

// llmLine is one LLM link: provider, model, state and its cool-down or
// outage.
func llmLine(l orchestrator.LLMLink, now time.Time) string {
	line := l.Provider
	if l.Model != "" {
		line += " " + l.Model
	}
	line += " " + l.State
	if !l.CoolingUntil.IsZero() {
		line += ", ready again " + ago(l.CoolingUntil, now)
	}
	if !l.NotAnsweringSince.IsZero() {
		line += fmt.Sprintf(" since %s: %s (checked %s)", l.NotAnsweringSince.Local().Format(time.TimeOnly), l.NotAnswering,
			l.CheckedAt.Local().Format(time.TimeOnly))
	}
	if l.ConsecutiveFailures > 0 {
		line += fmt.Sprintf(", %d failures in a row", l.ConsecutiveFailures)
	}
	if l.LastError != "" {
		line += ": " + l.LastError
	}
	return termLine(line, maxProgressLine)
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

package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Report is what a scenario did and found.
type Report struct {
	// Scenario is the scenario's name.
	Scenario string
	// Calls are the stream's calls in order.
	Calls []Call
	// Outcomes counts calls by outcome ("success" or an error type).
	Outcomes map[string]int
	// Runs is how many executions the tool logged; RanTwice lists the
	// tags of calls whose tool ran more than once.
	Runs     int
	RanTwice []string
	// OrchestratorRows and AgentRows are the tool_calls rows of the
	// stream's calls on each side; Joined counts the agents' rows whose
	// request_id is in the orchestrator's.
	OrchestratorRows, AgentRows, Joined int
	// Timings are the scenario's measurements, in the order taken.
	Timings []Timing
	// Notes say what else was seen.
	Notes []string
	// Problems are the failed checks; a scenario passes when there are none.
	Problems []string
	// Aborted, when set, is why the scenario stopped before its checks
	// ran (Run's error): the findings so far are not a pass.
	Aborted string
}

// Timing is one measured duration.
type Timing struct {
	// What was measured, from which event to which.
	What string
	D    time.Duration
}

func (rep *Report) time(what string, d time.Duration) {
	rep.Timings = append(rep.Timings, Timing{what, d})
}
func (rep *Report) note(format string, a ...any) {
	rep.Notes = append(rep.Notes, fmt.Sprintf(format, a...))
}
func (rep *Report) problem(format string, a ...any) {
	rep.Problems = append(rep.Problems, fmt.Sprintf(format, a...))
}

// Timing returns the measurement named what, if taken.
func (rep *Report) Timing(what string) (time.Duration, bool) {
	for _, t := range rep.Timings {
		if t.What == what {
			return t.D, true
		}
	}
	return 0, false
}

// Write prints the findings.
func (rep *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "findings of %s:\n", rep.Scenario)
	var kinds []string
	for k := range rep.Outcomes {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", rep.Outcomes[k], k))
	}
	fmt.Fprintf(w, "  calls:      %d (%s), slowest %s (bound %s)\n", len(rep.Calls), strings.Join(parts, ", "), rep.slowest().Round(time.Millisecond), CallBound)
	fmt.Fprintf(w, "  executions: %d logged by the tool, %d ran twice\n", rep.Runs, len(rep.RanTwice))
	fmt.Fprintf(w, "  audit:      %d orchestrator rows, %d agent rows, %d joined by request_id\n", rep.OrchestratorRows, rep.AgentRows, rep.Joined)
	for _, t := range rep.Timings {
		fmt.Fprintf(w, "  %-50s %s\n", t.What+":", t.D.Round(time.Millisecond))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  PROBLEM: %s\n", p)
	}
	switch {
	case rep.Aborted != "":
		fmt.Fprintf(w, "  result: ABORTED before its checks ran: %s\n", rep.Aborted)
	case len(rep.Problems) == 0:
		fmt.Fprintln(w, "  result: every check passed")
	}
}

func (rep *Report) slowest() time.Duration {
	var m time.Duration
	for _, c := range rep.Calls {
		m = max(m, c.Took)
	}
	return m
}

// agentRow is one tool_calls row of an agent.
type agentRow struct {
	agent, requestID, status, errorType, tag string
}

// check runs the checks every scenario shares and fills the report.
func (r *run) check(ctx context.Context) error {
	r.bg.Wait()
	rep := r.rep
	r.mu.Lock()
	for _, c := range r.calls {
		rep.Calls = append(rep.Calls, *c)
	}
	r.mu.Unlock()
	rep.Outcomes = map[string]int{}
	for _, c := range rep.Calls {
		rep.Outcomes[c.Outcome]++
		switch c.Outcome {
		case "hang":
			rep.problem("%s did not end within %s: %s", c.Tag, CallBound, c.Text)
		case "untyped":
			rep.problem("%s ended with an error without a type: %q", c.Tag, c.Text)
		}
	}

	// Executions, from the tool's own run log.
	runs := map[string]int{}
	if b, err := os.ReadFile(r.runLog); err == nil {
		for _, line := range strings.Fields(string(b)) {
			runs[line]++
			rep.Runs++
		}
	} else if !os.IsNotExist(err) {
		return fmt.Errorf("read run log: %w", err)
	}
	tags := map[string]bool{}
	for _, c := range rep.Calls {
		tags[c.Tag] = true
	}
	for tag, n := range runs {
		if n > 1 {
			rep.RanTwice = append(rep.RanTwice, tag)
			rep.problem("%s ran %d times", tag, n)
		}
		if !tags[tag] {
			rep.problem("the tool ran for %q, which no call asked for", tag)
		}
	}
	sort.Strings(rep.RanTwice)

	// The orchestrator's trail: one row per call, with the call's outcome.
	res, err := r.queryAudits(ctx,
		`SELECT json_extract(params, '$.tag'), request_id, status, coalesce(error_type, '') FROM tool_calls WHERE json_extract(params, '$.tag') LIKE 'call-%' ORDER BY id`)
	if err != nil {
		return err
	}
	rep.OrchestratorRows = len(res.Rows)
	byTag := map[string][][]any{}
	orchStatus := map[string]string{}
	for _, row := range res.Rows {
		byTag[str(row[0])] = append(byTag[str(row[0])], row)
		orchStatus[str(row[1])] = str(row[2])
	}
	for i := range rep.Calls {
		c := &rep.Calls[i]
		rows := byTag[c.Tag]
		if c.Outcome == "hang" || ((c.Outcome == OutcomeNodeKilled || c.Outcome == OutcomeNodeLost) && len(rows) == 0) {
			continue // a call cut by the node's death may not have ended
		}
		if len(rows) != 1 {
			rep.problem("%s: %d rows in the orchestrator's tool_calls, want 1", c.Tag, len(rows))
			continue
		}
		c.RequestID = str(rows[0][1])
		want := c.Outcome
		if want == OutcomeNodeKilled || want == OutcomeNodeLost {
			continue
		}
		if got := str(rows[0][3]); str(rows[0][2]) == "success" {
			if want != "success" {
				rep.problem("%s: audited as success, answered %s", c.Tag, want)
			}
		} else if got != want {
			rep.problem("%s: audited as %s error, answered %s", c.Tag, got, want)
		}
	}

	// The agents' trails: every execution audited, every row joins.
	var agentRows []agentRow
	for _, e := range r.edges {
		res, err := sqlite.QueryReadOnly(ctx, filepath.Join(e.dataDir, "audit.db"),
			`SELECT request_id, status, coalesce(error_type, ''), coalesce(json_extract(params, '$.tag'), '') FROM tool_calls WHERE tool = 'mark'`)
		if err != nil {
			return err
		}
		for _, row := range res.Rows {
			agentRows = append(agentRows, agentRow{agent: e.id, requestID: str(row[0]), status: str(row[1]), errorType: str(row[2]), tag: str(row[3])})
		}
	}
	rep.AgentRows = len(agentRows)
	audited := map[string]bool{}
	agentOK := map[string]bool{}
	late := 0
	lateIDs, err := r.lateResults(ctx)
	if err != nil {
		return err
	}
	for _, a := range agentRows {
		audited[a.tag] = true
		st, ok := orchStatus[a.requestID]
		if !ok && lateIDs[a.requestID] {
			// The node never finished the call (it died), but received
			// the result afterwards and audited it as a late result.
			rep.Joined++
			rep.note("%s (%s) is in the orchestrator's trail as a late_result event only: the call was cut by the node's death", a.tag, a.requestID)
			continue
		}
		if tag, tagged := actors.RequestTagOf(a.requestID); !ok && tagged && r.killedNodes[tag] {
			// Its node died before the result came; the other nodes of
			// the cluster leave another node's results alone.
			rep.Joined++
			rep.note("%s (%s) is in the agent's trail only: its node %s was killed before the result came", a.tag, a.requestID, tag)
			continue
		}
		if !ok {
			rep.problem("agent %s audited request %s (%s) that the orchestrator's trail lacks", a.agent, a.requestID, a.tag)
			continue
		}
		rep.Joined++
		if a.status == "success" {
			agentOK[a.requestID] = true
			if st != "success" {
				late++
			}
		}
	}
	for tag := range runs {
		if !audited[tag] {
			rep.problem("%s ran on an agent but is not in the agent's tool_calls", tag)
		}
	}
	for id, st := range orchStatus {
		if st == "success" && !agentOK[id] {
			rep.problem("request %s succeeded for the orchestrator but no agent audited a successful run", id)
		}
	}
	if late > 0 {
		rep.note("%d run(s) succeeded on the agent after the orchestrator had given up on them (typed error to the model, result late)", late)
	}

	// The databases themselves.
	paths := r.auditPaths()
	for _, e := range r.edges {
		paths = append(paths, filepath.Join(e.dataDir, "audit.db"))
	}
	for _, p := range paths {
		res, err := sqlite.QueryReadOnly(ctx, p, `PRAGMA integrity_check`)
		if err != nil {
			return err
		}
		if len(res.Rows) != 1 || str(res.Rows[0][0]) != "ok" {
			rep.problem("integrity_check of %s: %v", p, res.Rows)
		}
	}
	return nil
}

// lateResults lists the request_ids the orchestrator received after it had
// stopped waiting for them (late_result events).
func (r *run) lateResults(ctx context.Context) (map[string]bool, error) {
	res, err := r.queryAudits(ctx,
		`SELECT json_extract(detail, '$.request_id') FROM events WHERE kind = ?`, actors.EventLateResult)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, row := range res.Rows {
		out[str(row[0])] = true
	}
	return out, nil
}

// lateResultAt is when the orchestrator first received requestID's report
// after it had stopped waiting for it: the earliest of its late_result
// events (ok false when there is none yet). It is the node's clock, on the
// machine the run's own clock reads.
func (r *run) lateResultAt(ctx context.Context, requestID string) (at time.Time, ok bool, err error) {
	res, err := r.queryAudits(ctx,
		`SELECT ts FROM events WHERE kind = ? AND json_extract(detail, '$.request_id') = ?`, actors.EventLateResult, requestID)
	if err != nil {
		return time.Time{}, false, err
	}
	for _, row := range res.Rows {
		t, err := time.Parse(time.RFC3339Nano, str(row[0]))
		if err != nil {
			return time.Time{}, false, fmt.Errorf("late_result of %s: %w", requestID, err)
		}
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok, nil
}

// requestID reads c's request_id from the orchestrator's trail.
func (r *run) requestID(ctx context.Context, c *Call) (string, error) {
	res, err := r.queryAudits(ctx, `SELECT request_id FROM tool_calls WHERE json_extract(params, '$.tag') = ?`, c.Tag)
	if err != nil {
		return "", err
	}
	if len(res.Rows) != 1 {
		return "", fmt.Errorf("%s: %d rows in the orchestrator's tool_calls, want 1", c.Tag, len(res.Rows))
	}
	return str(res.Rows[0][0]), nil
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// auditPaths are the orchestrators' audit databases: the node's, or every
// node's of a cluster.
func (r *run) auditPaths() []string {
	if len(r.audits) > 0 {
		return r.audits
	}
	return []string{r.audit}
}

// queryAudits runs q on every orchestrator audit database and returns
// all their rows, database after database.
func (r *run) queryAudits(ctx context.Context, q string, args ...any) (*sqlite.Result, error) {
	var all *sqlite.Result
	for _, p := range r.auditPaths() {
		res, err := sqlite.QueryReadOnly(ctx, p, q, args...)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = res
		} else {
			all.Rows = append(all.Rows, res.Rows...)
		}
	}
	return all, nil
}

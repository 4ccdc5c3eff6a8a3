package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/jobs"
	"github.com/evoclaw/evoclaw/persistence"
)

// jobsTimeout bounds one request of `evoclaw jobs` and `evoclaw approvals`.
const jobsTimeout = 30 * time.Second

// maxJobsBody bounds an answer read by these commands.
const maxJobsBody = 16 << 20

// cmdJobs is `evoclaw jobs list|add|remove|pause|resume|run-now|history`.
func cmdJobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("jobs", stderr)
	var nf nodeFlags
	nf.register(fs)
	var spec jobs.Spec
	var agents, tools string
	fs.StringVar(&spec.Schedule, "schedule", "", "add: cron expression (\"0 6 * * *\") or \"@every 1h\"")
	fs.StringVar(&spec.Prompt, "prompt", "", "add: what the run asks the model")
	fs.StringVar(&agents, "agents", "", "add: edge agents it concerns, comma-separated (one run each)")
	fs.StringVar(&tools, "tools", "", "add: the only tools the run may use, comma-separated patterns ({agent}__read_temp)")
	fs.StringVar(&spec.Timeout, "timeout", "", "add: time limit of a run (default 10m)")
	fs.StringVar(&spec.Missed, "missed", "", "add: catch_up (default) or skip")
	fs.StringVar(&spec.CatchUpWindow, "catch-up-window", "", "add: how late a missed run may still start (default 1h)")
	by := fs.String("by", "", "who makes the change (recorded in the audit trail; default: $USER)")
	limit := fs.Int("limit", 50, "history: runs to show")
	asJSON := fs.Bool("json", false, "print the node's JSON")
	pos, client, err := nf.parseSubcommand(args, "jobs needs a subcommand: list, add ID, remove ID, pause ID, resume ID, run-now ID, history [ID]")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, jobsTimeout)
	defer cancel()
	who := url.QueryEscape(decider(*by))
	sub, rest := pos[0], pos[1:]
	needID := func() (string, error) {
		if len(rest) != 1 {
			return "", fmt.Errorf("%w: jobs %s takes one job id", errUsage, sub)
		}
		return url.PathEscape(rest[0]), nil
	}
	var out any
	switch sub {
	case "list":
		var page orchestrator.JobsPage
		if err := client.getJSON(ctx, http.MethodGet, "/v1/jobs", nil, &page); err != nil {
			return fmt.Errorf("jobs list: %w", err)
		}
		if *asJSON {
			return printJSON(stdout, page)
		}
		tw := newTable(stdout, "JOB\tSCHEDULE\tAGENTS\tSTATE\tNEXT\tSOURCE")
		var unusable []jobs.Info
		for _, j := range page.Jobs {
			state, next := "active", j.Next.Local().Format("2006-01-02 15:04")
			if j.Paused {
				state, next = "paused", "-"
			}
			if j.Error != "" {
				state, next = "cannot run", "-"
				unusable = append(unusable, j)
			}
			if j.Running > 0 {
				state += fmt.Sprintf(" (%d running)", j.Running)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termLine(j.ID, 40), termLine(j.Schedule, 60), termLine(listOr(j.Agents, "-"), 60),
				state, next, j.Source)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, j := range unusable {
			fmt.Fprintf(stdout, "%s: %s (evoclaw jobs remove %s)\n", termLine(j.ID, 40), termLine(j.Error, 300), termLine(j.ID, 40))
		}
		return nil
	case "add":
		id, err := needID()
		if err != nil {
			return err
		}
		if spec.Schedule == "" || spec.Prompt == "" {
			// The node would refuse it too, as "schedule: required", naming
			// no flag and exiting 1.
			return fmt.Errorf("%w: jobs add needs --schedule (\"0 6 * * *\", \"@every 1h\") and --prompt TEXT", errUsage)
		}
		spec.ID, _ = url.PathUnescape(id)
		spec.Agents, spec.Tools = splitList(agents), splitList(tools)
		out = new(jobs.Info)
		err = client.getJSON(ctx, http.MethodPost, "/v1/jobs?by="+who, spec, out)
		if err != nil {
			return fmt.Errorf("jobs add: %w", err)
		}
	case "remove":
		id, err := needID()
		if err != nil {
			return err
		}
		if err := client.getJSON(ctx, http.MethodDelete, "/v1/jobs/"+id+"?by="+who, nil, nil); err != nil {
			return fmt.Errorf("jobs remove: %w", err)
		}
		fmt.Fprintln(stdout, "removed", rest[0])
		return nil
	case "pause", "resume":
		id, err := needID()
		if err != nil {
			return err
		}
		out = new(jobs.Info)
		if err := client.getJSON(ctx, http.MethodPost, "/v1/jobs/"+id+"/"+sub+"?by="+who, nil, out); err != nil {
			return fmt.Errorf("jobs %s: %w", sub, err)
		}
	case "run-now":
		id, err := needID()
		if err != nil {
			return err
		}
		var page orchestrator.RunsPage
		if err := client.getJSON(ctx, http.MethodPost, "/v1/jobs/"+id+"/run", nil, &page); err != nil {
			return fmt.Errorf("jobs run-now: %w", err)
		}
		if *asJSON {
			return printJSON(stdout, page)
		}
		return printRuns(stdout, page.Runs)
	case "history":
		q := url.Values{"limit": {fmt.Sprint(*limit)}}
		if len(rest) > 1 {
			return fmt.Errorf("%w: jobs history takes at most one job id", errUsage)
		}
		if len(rest) == 1 {
			q.Set("job", rest[0])
		}
		var page orchestrator.RunsPage
		if err := client.getJSON(ctx, http.MethodGet, "/v1/runs?"+q.Encode(), nil, &page); err != nil {
			return fmt.Errorf("jobs history: %w", err)
		}
		if *asJSON {
			return printJSON(stdout, page)
		}
		return printRuns(stdout, page.Runs)
	default:
		return fmt.Errorf("%w: unknown jobs subcommand %q", errUsage, sub)
	}
	return printJSON(stdout, out)
}

// printRuns writes runs as a table, newest first.
func printRuns(w io.Writer, runs []orchestrator.RunView) error {
	tw := newTable(w, "SCHEDULED\tJOB\tAGENT\tTRIGGER\tOUTCOME\tDETAIL")
	for _, r := range runs {
		outcome := r.Outcome
		if outcome == "" {
			outcome = "running"
		}
		detail := r.Error
		if r.MissedBefore > 0 {
			detail += fmt.Sprintf(" (+%d earlier instants missed)", r.MissedBefore)
		}
		if detail == "" {
			detail = r.ConversationID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Scheduled.Local().Format("2006-01-02 15:04"), termLine(r.Job, 40),
			termLine(listOr([]string{r.Agent}, "-"), 48), r.Trigger, outcome, termLine(detail, 120))
	}
	return tw.Flush()
}

// cmdApprovals is `evoclaw approvals list|approve|deny`.
func cmdApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("approvals", stderr)
	var nf nodeFlags
	nf.register(fs)
	state := fs.String("state", "pending", "list: pending, approved, denied, timed_out, canceled or all")
	by := fs.String("by", "", "approve/deny: who decides (default: $USER)")
	note := fs.String("note", "", "approve/deny: a note, shown to the model with a denial")
	asJSON := fs.Bool("json", false, "print the node's JSON")
	pos, client, err := nf.parseSubcommand(args, "approvals needs a subcommand: list, approve ID, deny ID")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, jobsTimeout)
	defer cancel()
	switch sub := pos[0]; sub {
	case "list":
		var page orchestrator.ApprovalsPage
		if err := client.getJSON(ctx, http.MethodGet, "/v1/approvals?state="+url.QueryEscape(*state), nil, &page); err != nil {
			return fmt.Errorf("approvals list: %w", err)
		}
		if *asJSON {
			return printJSON(stdout, page)
		}
		tw := newTable(stdout, "ID\tNODE\tSTATE\tTOOL\tREQUESTED\tEXPIRES\tDECIDED BY\tPARAMS\tWHY")
		for _, a := range page.Approvals {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termLine(a.ID, 40), termLine(a.Node, 40), a.State, termLine(a.Tool, 80),
				a.Requested.Local().Format("01-02 15:04:05"), a.Expires.Local().Format("15:04:05"), termLine(listOr([]string{a.DecidedBy}, "-"), 40),
				termLine(a.Params, approvalParamsCell), termLine(a.Reason, 80))
		}
		switch {
		case len(page.Unanswered) > 0:
			fmt.Fprintf(stderr, "partial list: no answer in time from %s\n", strings.Join(page.Unanswered, ", "))
		case page.Partial:
			fmt.Fprintln(stderr, "partial list: a node left its oldest approvals out (its answer is bounded)")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		printPendingArgs(stdout, page.Approvals)
		return nil
	case "approve", "deny":
		if len(pos) != 2 {
			return fmt.Errorf("%w: approvals %s takes one approval id", errUsage, sub)
		}
		var a json.RawMessage
		body := orchestrator.DecisionRequest{By: decider(*by), Note: *note}
		if err := client.getJSON(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(pos[1])+"/"+sub, body, &a); err != nil {
			return fmt.Errorf("approvals %s: %w", sub, err)
		}
		return printJSON(stdout, a)
	default:
		return fmt.Errorf("%w: unknown approvals subcommand %q", errUsage, sub)
	}
}

// Bounds of the PARAMS column of `approvals list`, and of the arguments
// printed in full below it, in runes.
const (
	approvalParamsCell = 60
	// approvalParamsFull holds all the node keeps with an approval: its
	// arguments whole (a rune is at least a byte).
	approvalParamsFull = orchestrator.MaxApprovalParamsBytes
)

// printPendingArgs prints in full, below the table, the arguments of each
// pending approval that the PARAMS cell cuts: they are the model's to
// write, and a call whose first 60 characters read harmless can end with
// what a person would deny. Whoever decides reads all of them.
func printPendingArgs(w io.Writer, list []persistence.Approval) {
	for _, a := range list {
		if a.State != persistence.ApprovalPending || utf8.RuneCountInString(termLine(a.Params, 0)) <= approvalParamsCell {
			continue
		}
		fmt.Fprintf(w, "%s %s arguments: %s\n", termLine(a.ID, 40), termLine(a.Tool, 80), termLine(a.Params, approvalParamsFull))
	}
}

// getJSON sends a request and decodes the JSON answer into out (when not
// nil).
func (c *nodeClient) getJSON(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJobsBody)).Decode(out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// decider is who a change or decision is recorded as.
func decider(by string) string {
	if by != "" {
		return by
	}
	if u := envUser(); u != "" {
		return u
	}
	return "cli"
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func listOr(s []string, none string) string {
	j := strings.Join(s, ",")
	if j == "" {
		return none
	}
	return j
}

// printJSON writes v as indented JSON, spelled to show as it is on a
// terminal (jsonSafe): a job's prompt, a run's error or an approval's note
// may hold what a model or an API client wrote.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", jsonSafe(b))
	return err
}

// envUser is the login name of whoever runs the command.
func envUser() string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	return ""
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
)

// Bounds of `evoclaw status`.
const (
	// statusTimeout bounds the whole request.
	statusTimeout = 10 * time.Second
	// maxStatusBody bounds the status document read.
	maxStatusBody = 16 << 20
)

// cmdStatus is `evoclaw status`: what the running node says about itself,
// as a table or (--json) as the node's JSON.
func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", stderr)
	var nf nodeFlags
	nf.register(fs)
	tools := fs.Bool("tools", false, "list each agent's tools with calls, errors, timeouts and latency")
	asJSON := fs.Bool("json", false, "print the node's status JSON (indented; characters a terminal would act on or hide written as \\u escapes)")
	if err := parseNoArgs(fs, args, "status"); err != nil {
		return err
	}
	client, err := nf.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	resp, err := client.do(ctx, http.MethodGet, "/v1/status", nil)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return fmt.Errorf("status: read answer: %w", err)
	}
	if *asJSON {
		var buf bytes.Buffer
		if err := json.Indent(&buf, body, "", "  "); err != nil {
			return fmt.Errorf("status: the node's answer is not JSON: %w", err)
		}
		buf.WriteByte('\n')
		// An agent's capability line is the agent's to write: C1 controls
		// and bidi overrides in it are written as \u escapes.
		_, err := stdout.Write(jsonSafe(buf.Bytes()))
		return err
	}
	var doc statusDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("status: decode answer: %w", err)
	}
	printStatus(stdout, &doc, *tools, time.Now())
	return nil
}

// printStatus writes doc as a table; sections the node did not send are
// left out.
func printStatus(w io.Writer, d *statusDoc, tools bool, now time.Time) {
	tw := newTable(w, "")
	node := termLine(d.NodeID, 80)
	if known, ok, reason := d.readiness(); known {
		if ok {
			node += "\tready"
		} else {
			node += "\tNOT READY"
			if reason != "" {
				node += ": " + termLine(reason, 200)
			}
		}
	}
	fmt.Fprintf(tw, "node\t%s\n", node)
	fmt.Fprintf(tw, "broker\t%s\n", termLine(d.Broker, 200))
	tw.Flush()
	printCluster(w, d)

	agents := append([]orchestrator.AgentStatus(nil), d.Agents...)
	sort.Slice(agents, func(i, j int) bool { return agents[i].ID < agents[j].ID })
	online := 0
	for _, a := range agents {
		if a.Online {
			online++
		}
	}
	fmt.Fprintf(w, "\nagents: %d online, %d offline\n", online, len(agents)-online)
	for _, a := range agents {
		state := "offline"
		if a.Online {
			state = "online"
		}
		if a.NotRecording != "" {
			state += ", NOT RECORDING" // why: on the next line
		}
		if a.Node != "" {
			// In a cluster: the node holding the agent's calls.
			state += ", calls held by " + termLine(a.Node, 64)
		}
		fmt.Fprintf(tw, "  %s\t%s\theard %s\t%s\n", termLine(a.ID, 64), state, ago(a.LastSeen, now), termLine(a.Capabilities, 120))
		if a.NotRecording != "" {
			// The agent's word, made one line as its capabilities are.
			fmt.Fprintf(tw, "  \tnot recording: %s; it refuses every command until its audit trail can write\n", termLine(a.NotRecording, maxProgressLine))
		}
		if !tools && len(a.Tools) > 0 {
			fmt.Fprintf(tw, "  \ttools: %s\n", termLine(strings.Join(a.Tools, ", "), maxProgressLine))
		}
	}
	tw.Flush()
	if len(d.Groups) > 0 {
		printGroups(w, d.Groups)
	}
	if tools {
		printTools(w, d, agents)
	}

	if d.sent["llm"] {
		fmt.Fprintf(w, "\nllm: %s, %d links\n", termLine(d.LLM.Provider, 80), len(d.LLM.Links))
		for _, l := range d.LLM.Links {
			fmt.Fprintln(w, "  "+llmLine(l, now))
		}
	}

	if in := d.ChatInput; in != nil {
		fmt.Fprintln(w, "\n"+chatInputLine(in, now))
	}

	fmt.Fprintln(w, "\naudit")
	if d.sent["audit_write"] {
		line := "  writes\tok"
		switch {
		case d.AuditWrite.Failing && d.auditReady():
			// A write failed for a full disk and the disk has room
			// again: the node is ready and the next write retries.
			// "FAILING" beside "ready" read as a contradiction.
			line = fmt.Sprintf("  writes\tlast failed %s: %s (room again: the next write retries)",
				ago(d.AuditWrite.LastFailure, now), termLine(d.AuditWrite.LastError, 200))
		case d.AuditWrite.Failing:
			line = "  writes\tFAILING: " + termLine(d.AuditWrite.LastError, 200)
		}
		if d.AuditWrite.FreeBytes >= 0 {
			line += fmt.Sprintf("\t%d MiB free", d.AuditWrite.FreeBytes>>20)
		}
		fmt.Fprintln(tw, line)
	}
	r := d.Audit.Retention
	line := fmt.Sprintf("  warm\tchain from seq %d\tlast prune %s (%d deleted, %d in all)", r.ChainStart, ago(r.LastRun, now), r.LastDeleted, r.TotalDeleted)
	if r.LastError != "" {
		line += "\terror: " + termLine(r.LastError, 200)
	}
	fmt.Fprintln(tw, line)
	if c := d.Audit.Cold; c != nil {
		line := fmt.Sprintf("  cold\tlag %d records\tshipped to seq %d of %d, last %s", c.Lag, c.ShippedSeq, c.HeadSeq, ago(c.LastShip, now))
		if c.LastError != "" {
			line += fmt.Sprintf("\tfailing (%d): %s", c.Failures, termLine(c.LastError, 200))
		}
		fmt.Fprintln(tw, line)
	} else {
		fmt.Fprintln(tw, "  cold\toff")
	}
	tw.Flush()

	if d.sent["mqtt"] {
		m := d.MQTT
		state := "connected"
		if !m.Connected {
			state = "NOT CONNECTED"
		}
		kind := "external"
		if m.Embedded {
			kind = "embedded"
		}
		fmt.Fprintf(w, "\nmqtt: %s broker %s, %s\n", kind, termLine(m.URL, 200), state)
		if m.ClientCount >= 0 {
			fmt.Fprintf(w, "broker clients: %d\n", m.ClientCount)
			for _, c := range m.Clients {
				user := "username=" + c.Username
				if c.Username == "" {
					user = "anonymous" // "username=" alone read as a field left out
				}
				fmt.Fprintf(w, "  %s\n", termLine(strings.TrimSpace(c.ID+" "+user+" remote="+c.Remote), maxProgressLine))
			}
		}
	}
}

// printGroups writes each group with its online members and tools.
func printGroups(w io.Writer, groups []orchestrator.GroupStatus) {
	fmt.Fprintf(w, "\ngroups: %d\n", len(groups))
	tw := newTable(w, "")
	for _, g := range groups {
		online := "none online"
		if len(g.Online) > 0 {
			online = fmt.Sprintf("%d online: %s", len(g.Online), strings.Join(g.Online, ", "))
		}
		fmt.Fprintf(tw, "  %s\tmembers %s\t%s\n", termLine(g.Name, 64), termLine(strings.Join(g.Members, ", "), 200), termLine(online, maxProgressLine))
		if len(g.Tools) > 0 {
			fmt.Fprintf(tw, "  \ttools: %s\n", termLine(strings.Join(g.Tools, ", "), maxProgressLine))
		}
	}
	tw.Flush()
}

// printTools writes the table of each agent's tools and their counters.
func printTools(w io.Writer, d *statusDoc, agents []orchestrator.AgentStatus) {
	fmt.Fprintln(w, "\ntools")
	tw := newTable(w, "  agent\ttool\tcalls\terrors\ttimeouts\tavg ms\tmax ms")
	for _, a := range agents {
		for i, name := range a.Tools {
			row := "  " + termLine(a.ID, 64) + "\t" + termLine(name, 64) + "\t"
			if s, ok := d.toolStatsOf(a, i); ok {
				row += fmt.Sprintf("%d\t%d\t%d\t%.1f\t%d", s.Calls, s.Errors, s.Timeouts, s.AvgMs, s.MaxMs)
			} else {
				row += "0\t0\t0\t-\t-"
			}
			fmt.Fprintln(tw, row)
		}
	}
	tw.Flush()
}

// printCluster writes the cluster's members as this node sees them;
// nothing for a node alone.
func printCluster(w io.Writer, d *statusDoc) {
	c := d.Cluster
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\ncluster %s: %d members\n", termLine(c.Name, 64), len(c.Members))
	tw := newTable(w, "")
	for _, m := range c.Members {
		self := ""
		if m.Self {
			self = "\t(this node)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", termLine(m.Node, 64), termLine(m.Address, 80), termLine(m.ID, 120), self)
	}
	tw.Flush()
}

// chatInputLine says how much input API clients' chats may still bring
// the node and how many were refused for want of it.
func chatInputLine(in *orchestrator.ChatInputStatus, now time.Time) string {
	mib := func(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
	line := fmt.Sprintf("chat input: %s of %s MiB free now (%d MiB an hour); ", mib(in.AvailableBytes), mib(in.BurstBytes), in.MBPerHour)
	if in.Refused == 0 {
		return line + "no chat refused"
	}
	return line + fmt.Sprintf("%d chats REFUSED (429), the last %s, told to retry in %s", in.Refused, ago(in.LastRefused, now),
		short(time.Duration(in.LastRetryAfterS)*time.Second))
}

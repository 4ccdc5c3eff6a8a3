package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence/hot"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// Defaults of `evoclaw logs`.
const (
	defaultLogsLimit = 50
	defaultLogsPoll  = 500 * time.Millisecond
)

// logFilters maps --filter values to entry kinds.
var logFilters = map[string]string{
	"tool": hot.KindTool, "llm": hot.KindLLM, "message": hot.KindMessage, "event": hot.KindEvent, "": "",
}

// cmdLogs prints the newest audited records of a node's warm database and,
// with --follow, keeps printing new ones as they are committed, by polling
// the database (readable while the node writes it) until interrupted. On a
// terminal each record is printed escaped (EscapeTerminal), as `audit sql`
// prints its table: a tool name or a message may hold what a model or a
// tool wrote, escape sequences and bidi overrides included.
func cmdLogs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logs", stderr)
	dataDir, conf := addDataDirFlags(fs)
	filter := fs.String("filter", "", "only this kind of record: tool, llm, message or event")
	agent := fs.String("agent", "", "only records about this edge agent")
	follow := fs.Bool("follow", false, "keep printing new records until interrupted")
	limit := fs.Int("limit", defaultLogsLimit, "how many of the newest records to print first (0: all)")
	poll := fs.Duration("poll", defaultLogsPoll, "how often --follow looks for new records")
	node := fs.String("node", "", "read the running node's hot tier through its API (http://127.0.0.1:8787) instead of the database file")
	tokenFile := fs.String("token-file", "", "with --node: file holding the API bearer token (default: $"+envToken+", or the one in --data-dir)")
	if err := parseNoArgs(fs, args, "logs"); err != nil {
		return err
	}
	if err := conf.apply(fs, dataDir, nil); err != nil {
		return err
	}
	kind, ok := logFilters[*filter]
	if !ok {
		return fmt.Errorf("%w: --filter %q, want tool, llm, message or event", errUsage, *filter)
	}
	if *poll <= 0 {
		return fmt.Errorf("%w: --poll must be positive", errUsage)
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit %d must not be negative (0: all)", errUsage, *limit)
	}
	f := hot.Filter{Kind: kind, AgentID: *agent}
	show := entryPrinter(stdout, isTerminal(stdout))
	if *node != "" {
		nf := nodeFlags{dataDir: *dataDir, node: *node, tokenFile: *tokenFile}
		client, err := nf.client()
		if err != nil {
			return fmt.Errorf("logs --node: %w", err)
		}
		return logsFromNode(ctx, client, show, f, *limit, *follow)
	}
	path := filepath.Join(*dataDir, orchestrator.AuditFile)
	entries, head, err := sqlite.RecentEntries(ctx, path, f, *limit)
	if err != nil {
		return err
	}
	for _, e := range entries {
		show(e)
	}
	if !*follow {
		return nil
	}
	t := time.NewTicker(*poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil // interrupted: the normal end of --follow
		case <-t.C:
		}
		for {
			var more []hot.Entry
			prev := head
			more, head, err = sqlite.EntriesAfter(ctx, path, head, f)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			for _, e := range more {
				show(e)
			}
			if head == prev {
				break // caught up
			}
		}
	}
}

// entryPrinter prints one record a line to w, escaped for a terminal when
// escape is set; to a file or a pipe it writes the records as they are.
func entryPrinter(w io.Writer, escape bool) func(hot.Entry) {
	return func(e hot.Entry) {
		s := e.String()
		if escape {
			s = sqlite.EscapeTerminal(s)
		}
		fmt.Fprintln(w, s)
	}
}

// Bounds of `logs --node`.
const (
	// logsRequestTimeout bounds one request, a --follow long poll of 30 s
	// included.
	logsRequestTimeout = 90 * time.Second
	// maxLogsPage bounds the answer read: the hot tier holds 1,024
	// records.
	maxLogsPage = 64 << 20
)

// logsFromNode prints the node's hot tier through GET /v1/logs; --follow
// long-polls it. The node and its token are found as for `evoclaw status`.
func logsFromNode(ctx context.Context, client *nodeClient, show func(hot.Entry), f hot.Filter, limit int, follow bool) error {
	var after *int64
	for {
		q := url.Values{}
		if f.Kind != "" {
			q.Set("kind", f.Kind)
		}
		if f.AgentID != "" {
			q.Set("agent", f.AgentID)
		}
		if after != nil {
			q.Set("after", strconv.FormatInt(*after, 10))
			q.Set("wait", "30s")
			q.Set("limit", "0")
		} else {
			q.Set("limit", strconv.Itoa(limit))
		}
		page, err := logsPage(ctx, client, q)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the normal end of --follow
			}
			return fmt.Errorf("logs --node: %w", err)
		}
		for _, e := range page.Entries {
			show(e)
		}
		if !follow {
			return nil
		}
		// Head is past everything the node looked at, matching or not.
		head := page.Head
		after = &head
	}
}

// logsPage asks the node for one page of records.
func logsPage(ctx context.Context, client *nodeClient, q url.Values) (*orchestrator.LogsPage, error) {
	ctx, cancel := context.WithTimeout(ctx, logsRequestTimeout)
	defer cancel()
	resp, err := client.do(ctx, http.MethodGet, "/v1/logs?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var page orchestrator.LogsPage
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxLogsPage)).Decode(&page); err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	return &page, nil
}

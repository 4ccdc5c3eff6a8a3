package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// the database (readable while the node writes it) until interrupted.
func cmdLogs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("logs", stderr)
	dataDir, conf := addDataDirFlags(fs)
	filter := fs.String("filter", "", "only this kind of record: tool, llm, message or event")
	agent := fs.String("agent", "", "only records about this edge agent")
	follow := fs.Bool("follow", false, "keep printing new records until interrupted")
	limit := fs.Int("limit", defaultLogsLimit, "how many of the newest records to print first (0: all)")
	poll := fs.Duration("poll", defaultLogsPoll, "how often --follow looks for new records")
	node := fs.String("node", "", "read the running node's hot tier through its API (http://127.0.0.1:8787) instead of the database file")
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
	f := hot.Filter{Kind: kind, AgentID: *agent}
	if *node != "" {
		return logsFromNode(ctx, stdout, *node, *dataDir, f, *limit, *follow)
	}
	path := filepath.Join(*dataDir, orchestrator.AuditFile)
	entries, head, err := sqlite.RecentEntries(ctx, path, f, *limit)
	if err != nil {
		return err
	}
	for _, e := range entries {
		fmt.Fprintln(stdout, e)
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
				fmt.Fprintln(stdout, e)
			}
			if head == prev {
				break // caught up
			}
		}
	}
}

// logsFromNode prints the node's hot tier through GET /v1/logs; --follow
// long-polls it. The bearer token comes from EVOCLAW_HTTP_TOKEN, else from
// the node's data directory (readable only by the node's user).
func logsFromNode(ctx context.Context, stdout io.Writer, base, dataDir string, f hot.Filter, limit int, follow bool) error {
	token := os.Getenv("EVOCLAW_HTTP_TOKEN")
	if token == "" {
		b, err := os.ReadFile(filepath.Join(dataDir, orchestrator.HTTPTokenFile))
		if err != nil {
			return fmt.Errorf("logs --node: no EVOCLAW_HTTP_TOKEN and no token file in --data-dir %s: %w", dataDir, err)
		}
		token = strings.TrimSpace(string(b))
	}
	client := &http.Client{Timeout: 90 * time.Second}
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
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/logs?"+q.Encode(), nil)
		if err != nil {
			return fmt.Errorf("logs --node: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: the normal end of --follow
			}
			return fmt.Errorf("logs --node: %w", err)
		}
		var page orchestrator.LogsPage
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("logs --node: %s answered %s", base, resp.Status)
		}
		if err != nil {
			return fmt.Errorf("logs --node: read answer: %w", err)
		}
		for _, e := range page.Entries {
			fmt.Fprintln(stdout, e)
		}
		if !follow {
			return nil
		}
		// Head is past everything the node looked at, matching or not.
		head := page.Head
		after = &head
	}
}

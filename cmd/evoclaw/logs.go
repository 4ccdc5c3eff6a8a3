package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
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
	dataDir := fs.String("data-dir", orchestrator.DefaultDataDir, "the node's data directory (holds audit.db)")
	filter := fs.String("filter", "", "only this kind of record: tool, llm, message or event")
	agent := fs.String("agent", "", "only records about this edge agent")
	follow := fs.Bool("follow", false, "keep printing new records until interrupted")
	limit := fs.Int("limit", defaultLogsLimit, "how many of the newest records to print first (0: all)")
	poll := fs.Duration("poll", defaultLogsPoll, "how often --follow looks for new records")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: logs takes no arguments, got %q", errUsage, pos)
	}
	kind, ok := logFilters[*filter]
	if !ok {
		return fmt.Errorf("%w: --filter %q, want tool, llm, message or event", errUsage, *filter)
	}
	if *poll <= 0 {
		return fmt.Errorf("%w: --poll must be positive", errUsage)
	}
	f := hot.Filter{Kind: kind, AgentID: *agent}
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

package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "sql" {
		return fmt.Errorf("%w: evoclaw audit sql [--data-dir DIR] \"SELECT ...\"", errUsage)
	}
	fs := newFlags("audit sql", stderr)
	dataDir := fs.String("data-dir", orchestrator.DefaultDataDir, "the node's data directory (holds audit.db)")
	asJSON := fs.Bool("json", false, "print rows as a JSON array")
	asCSV := fs.Bool("csv", false, "print rows as CSV")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return fmt.Errorf("%w: want exactly one SQL statement, got %d arguments", errUsage, len(pos))
	}
	res, err := sqlite.QueryReadOnly(ctx, filepath.Join(*dataDir, orchestrator.AuditFile), pos[0])
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		return res.WriteJSON(stdout)
	case *asCSV:
		return res.WriteCSV(stdout)
	}
	return res.WriteTable(stdout)
}

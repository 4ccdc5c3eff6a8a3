package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// cmdMetrics prints metrics computed from a node's audit trail. --tools
// (the only family so far) gives calls, errors and latency per tool and
// agent: the "tools" report of `evoclaw audit report`.
func cmdMetrics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("metrics", stderr)
	dataDir, conf := addDataDirFlags(fs)
	tools := fs.Bool("tools", false, "calls, errors and latency per tool and agent")
	out := addRowsFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || !*tools {
		return fmt.Errorf("%w: evoclaw metrics --tools [--config FILE] [--data-dir DIR] [--json|--csv]", errUsage)
	}
	if err := conf.apply(fs, dataDir, nil); err != nil {
		return err
	}
	r, _ := sqlite.ReportByName("tools")
	path := filepath.Join(*dataDir, orchestrator.AuditFile)
	q, err := sqlite.ReportSQL(ctx, path, r)
	if err != nil {
		return err
	}
	res, err := sqlite.QueryReadOnly(ctx, path, q)
	if err != nil {
		return err
	}
	return out.write(stdout, res)
}

// rowsFlags are the --json and --csv flags of a command that prints rows.
type rowsFlags struct {
	json, csv *bool
}

// addRowsFlags registers --json and --csv on fs.
func addRowsFlags(fs *flag.FlagSet) rowsFlags {
	return rowsFlags{
		json: fs.Bool("json", false, "print rows as a JSON array"),
		csv:  fs.Bool("csv", false, "print rows as CSV"),
	}
}

// write prints res as the flags ask: JSON, CSV, or by default a table.
func (f rowsFlags) write(w io.Writer, res *sqlite.Result) error {
	switch {
	case *f.json:
		return res.WriteJSON(w)
	case *f.csv:
		return res.WriteCSV(w)
	}
	return res.WriteTable(w)
}

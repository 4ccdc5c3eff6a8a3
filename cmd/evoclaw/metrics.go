package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// cmdMetrics prints metrics computed from a node's audit trail. --tools
// (the only family so far) gives calls, errors and latency per tool and
// agent: the "tools" report of `evoclaw audit report` on the warm tier,
// printed as that command prints it (streamed with --csv or --json,
// bounded by --timeout).
func cmdMetrics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("metrics", stderr)
	warm, noCold := tierWarm, ""
	tf := tierFlags{tier: &warm, coldURL: &noCold, fs: fs}
	tf.dataDir, tf.config = addDataDirFlags(fs)
	tools := fs.Bool("tools", false, "calls, errors and latency per tool and agent")
	out := addRowsFlags(fs)
	timeout := addTimeoutFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || !*tools {
		return fmt.Errorf("%w: evoclaw metrics --tools [--config FILE] [--data-dir DIR] [--json|--csv] [--timeout D]", errUsage)
	}
	if err := checkRowsFlags(out); err != nil {
		return err
	}
	if *timeout < 0 {
		return fmt.Errorf("%w: --timeout must not be negative", errUsage)
	}
	if err := tf.check(); err != nil {
		return err
	}
	r, _ := sqlite.ReportByName("tools")
	q, err := sqlite.ReportSQL(ctx, tf.warmPath(), r)
	if err != nil {
		return err
	}
	return printTier(ctx, tf, out, *timeout, stdout, q)
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

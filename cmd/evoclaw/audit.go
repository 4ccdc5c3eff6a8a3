package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

const auditUsage = `evoclaw audit sql [--data-dir DIR] [--json|--csv] "SELECT ..."
       evoclaw audit verify [--data-dir DIR]`

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, auditUsage)
	}
	switch args[0] {
	case "sql":
		return cmdAuditSQL(ctx, args[1:], stdout, stderr)
	case "verify":
		return cmdAuditVerify(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown audit command %q: %s", errUsage, args[0], auditUsage)
}

func cmdAuditSQL(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit sql", stderr)
	dataDir := fs.String("data-dir", orchestrator.DefaultDataDir, "the node's data directory (holds audit.db)")
	asJSON := fs.Bool("json", false, "print rows as a JSON array")
	asCSV := fs.Bool("csv", false, "print rows as CSV")
	pos, err := parseFlags(fs, args)
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

// errChainBroken makes `audit verify` exit non-zero after printing its report.
var errChainBroken = errors.New("audit chain does not verify")

func cmdAuditVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit verify", stderr)
	dataDir := fs.String("data-dir", orchestrator.DefaultDataDir, "the node's data directory (holds audit.db)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: audit verify takes no arguments, got %q", errUsage, pos)
	}
	rep, err := sqlite.VerifyChain(ctx, filepath.Join(*dataDir, orchestrator.AuditFile))
	return printVerify(stdout, "warm", rep, err)
}

// printVerify prints one tier's verification report and turns a broken
// chain into errChainBroken.
func printVerify(w io.Writer, tier string, rep *auditchain.Report, err error) error {
	var be *auditchain.BreakError
	if err != nil && !errors.As(err, &be) {
		return err
	}
	if rep != nil {
		from := "genesis"
		if rep.StartSeq > 0 {
			from = fmt.Sprintf("checkpoint at chain_seq %d", rep.StartSeq)
		}
		fmt.Fprintf(w, "%s: chain %s: %d records verified from %s; head chain_seq %d hash %s\n",
			tier, rep.ChainID, rep.Verified, from, rep.HeadSeq, rep.HeadHash)
		if rep.Unchained > 0 {
			fmt.Fprintf(w, "%s: %d rows predate the hash chain (schema before v3) and cannot be verified\n", tier, rep.Unchained)
		}
	}
	if be != nil {
		fmt.Fprintf(w, "%s: BROKEN: %v\n", tier, be)
		return fmt.Errorf("%w: %s tier, first broken record %s %s (chain_seq %d)", errChainBroken, tier, be.Table, be.RecordID, be.Seq)
	}
	fmt.Fprintf(w, "%s: ok\n", tier)
	return nil
}

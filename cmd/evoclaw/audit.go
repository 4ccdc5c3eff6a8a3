package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/persistence/auditchain"
	"github.com/evoclaw/evoclaw/persistence/cold"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

const auditUsage = `evoclaw audit sql [--config FILE] [--data-dir DIR] [--tier warm|cold|all] [--cold-url URL] [--json|--csv] [--timeout 60s] "SELECT ..."
       evoclaw audit verify [--config FILE] [--data-dir DIR] [--key FILE | --unkeyed] [--summaries] [--tier warm|cold|all] [--cold-url URL]   (exit 0 intact, 1 broken or not verifiable, 2 usage)
       evoclaw audit status [--config FILE] [--data-dir DIR] [--cold-url URL] [--json]
       evoclaw audit backup [--config FILE] [--data-dir DIR] [--all] [--force] [--key FILE | --unkeyed] DEST   (a verified copy of audit.db, taken while the node runs; --all: DEST is a new directory with everything a restore needs)
       evoclaw audit report NAME [ARG] [--config FILE] [--data-dir DIR] [--tier warm|cold|all] [--cold-url URL] [--json|--csv] [--timeout 60s]   (NAME: see docs/AUDIT.md; "evoclaw audit report list")
(--config: the node's evoclaw.toml gives data_dir and [audit.cold] url; flags win)`

// coldURLEnv is read when --cold-url is not given. The token always comes
// from cold.TokenEnv.
const coldURLEnv = "EVOCLAW_COLD_URL"

// Tiers accepted by --tier.
const (
	tierWarm = "warm"
	tierCold = "cold"
	tierAll  = "all"
)

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, auditUsage)
	}
	switch args[0] {
	case "sql":
		return cmdAuditSQL(ctx, args[1:], stdout, stderr)
	case "verify":
		return cmdAuditVerify(ctx, args[1:], stdout, stderr)
	case "report":
		return cmdAuditReport(ctx, args[1:], stdout, stderr)
	case "status":
		return cmdAuditStatus(ctx, args[1:], stdout, stderr)
	case "backup":
		return cmdAuditBackup(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("%w: unknown audit command %q: %s", errUsage, args[0], auditUsage)
}

// tierFlags are the flags every audit command shares.
type tierFlags struct {
	dataDir, tier, coldURL *string
	config                 *configFlag
	fs                     *flag.FlagSet
}

func addTierFlags(fs *flag.FlagSet) tierFlags {
	tf := tierFlags{
		tier:    fs.String("tier", tierWarm, "warm (this node's SQLite), cold (the libSQL tier) or all (both, without duplicates)"),
		coldURL: fs.String("cold-url", coldURLDefault(), "URL of the cold tier (default: [audit.cold] url of --config, else $"+coldURLEnv+"); its token comes from $"+cold.TokenEnv),
		fs:      fs,
	}
	tf.dataDir, tf.config = addDataDirFlags(fs)
	return tf
}

func (f tierFlags) warmPath() string { return filepath.Join(*f.dataDir, orchestrator.AuditFile) }

// check applies --config and validates --tier; call it after parsing.
func (f tierFlags) check() error {
	if err := f.config.apply(f.fs, f.dataDir, f.coldURL); err != nil {
		return err
	}
	switch *f.tier {
	case tierWarm:
		return nil
	case tierCold, tierAll:
		if *f.coldURL == "" { // before any work on the warm tier
			return fmt.Errorf("%w: --tier %s needs the cold tier's URL: --cold-url URL or $%s", errUsage, *f.tier, coldURLEnv)
		}
		return nil
	}
	return fmt.Errorf("%w: --tier %q, want warm, cold or all", errUsage, *f.tier)
}

// openCold opens the cold tier named by --cold-url, or says how to name one.
func (f tierFlags) openCold() (*cold.Store, error) {
	if *f.coldURL == "" {
		return nil, fmt.Errorf("%w: --tier %s needs the cold tier's URL: --cold-url URL or $%s", errUsage, *f.tier, coldURLEnv)
	}
	return cold.Open(cold.Config{URL: *f.coldURL}.FromEnv())
}

// defaultAuditQueryTimeout bounds audit sql and audit report unless
// --timeout says otherwise.
const defaultAuditQueryTimeout = 60 * time.Second

// maxTableBytes bounds what the default table output holds (it needs
// every row for the column widths): cells cut to what the table shows,
// counted with their overhead. --csv and --json stream and hold no rows.
const maxTableBytes = 64 << 20

// tableCellOverhead is what one held cell costs besides its text.
const tableCellOverhead = 32

// addTimeoutFlag registers --timeout.
func addTimeoutFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("timeout", defaultAuditQueryTimeout, "stop the query after this long and fail (0: no limit)")
}

// checkRowsFlags refuses --json with --csv.
func checkRowsFlags(out rowsFlags) error {
	if *out.json && *out.csv {
		return fmt.Errorf("%w: --json and --csv exclude each other", errUsage)
	}
	return nil
}

func cmdAuditSQL(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit sql", stderr)
	tf := addTierFlags(fs)
	out := addRowsFlags(fs)
	timeout := addTimeoutFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return fmt.Errorf("%w: want exactly one SQL statement, got %d arguments", errUsage, len(pos))
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
	return printTier(ctx, tf, out, *timeout, stdout, pos[0])
}

// printTier runs q with args read-only on the tier --tier names, within
// timeout (0: none), and prints its rows as out asks. CSV and JSON are
// written as the rows are read (from warm and all; the cold tier answers
// a query whole), so a large result is not held in memory; a table needs
// every row for its widths, so it holds them, cut to what it shows, up to
// sqlite.MaxQueryRows rows and maxTableBytes. CSV to a terminal has its
// control characters escaped, as the table has.
func printTier(ctx context.Context, tf tierFlags, out rowsFlags, timeout time.Duration, w io.Writer, q string, args ...any) error {
	parent := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	var rw sqlite.RowWriter
	switch {
	case *out.json:
		rw = sqlite.NewJSONWriter(bw)
	case *out.csv:
		rw = sqlite.NewCSVWriter(bw, isTerminal(w))
	default:
		rw = &tableRows{w: bw}
	}
	err := eachTierRow(ctx, tf, rw, q, args...)
	if err == nil {
		err = rw.Close()
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write result: %w", ferr)
	}
	switch {
	case err == nil:
		return nil
	case parent.Err() != nil:
		return fmt.Errorf("%w: the query was stopped", errInterrupted)
	case ctx.Err() != nil:
		return fmt.Errorf("the query ran longer than --timeout %v and was stopped: narrow it, or raise --timeout (0: no limit)", timeout)
	}
	return err
}

// eachTierRow runs q with args read-only on the tier --tier names and
// hands its columns and rows to rw.
func eachTierRow(ctx context.Context, tf tierFlags, rw sqlite.RowWriter, q string, args ...any) error {
	switch *tf.tier {
	case tierCold:
		res, err := queryCold(ctx, tf, q, args...)
		if err != nil {
			return err
		}
		if err := rw.Columns(res.Columns); err != nil {
			return err
		}
		for _, row := range res.Rows {
			if err := rw.Row(row); err != nil {
				return err
			}
		}
		return nil
	case tierAll:
		return withMerged(ctx, tf, func(merged string) error {
			return sqlite.QueryEach(ctx, merged, q, args, rw.Columns, rw.Row)
		})
	}
	return sqlite.QueryEach(ctx, tf.warmPath(), q, args, rw.Columns, rw.Row)
}

// tableRows holds a result for the default table output, each cell cut
// to what WriteTable shows of it, and writes the table on Close.
type tableRows struct {
	w    io.Writer
	res  sqlite.Result
	size int64
}

func (t *tableRows) Columns(cols []string) error {
	t.res = sqlite.Result{Columns: cols, Rows: [][]any{}}
	return nil
}

func (t *tableRows) Row(row []any) error {
	if len(t.res.Rows) == sqlite.MaxQueryRows {
		return fmt.Errorf("query audit database: %w: more than %d rows for a table; narrow it with WHERE or LIMIT, or print it with --csv or --json, which hold no rows", sqlite.ErrTooManyRows, sqlite.MaxQueryRows)
	}
	for i, v := range row {
		row[i] = tableValue(v)
		t.size += tableCellOverhead
		if s, ok := row[i].(string); ok {
			t.size += int64(len(s))
		}
	}
	if t.size > maxTableBytes {
		return fmt.Errorf("query audit database: %w: more than %d MiB for a table; narrow it with WHERE or LIMIT, or print it with --csv or --json, which hold no rows", sqlite.ErrTooManyRows, maxTableBytes>>20)
	}
	t.res.Rows = append(t.res.Rows, row)
	return nil
}

func (t *tableRows) Close() error { return t.res.WriteTable(t.w) }

// tableCutRunes is how many runes of a cell tableRows keeps: one more than
// WriteTable shows (80), so that it still sees the cell is longer and
// cuts it the same way.
const tableCutRunes = 81

// tableValue returns v as tableRows holds it: text and blobs longer than
// WriteTable shows are cut (a blob that is not UTF-8 becomes its x'hex'
// text first, as WriteTable shows it); WriteTable prints the result as it
// would have printed v (it escapes control characters and invalid UTF-8
// after the cut, which only makes a cut cell longer).
func tableValue(v any) any {
	switch v := v.(type) {
	case string:
		return cutRunes(v, tableCutRunes)
	case []byte:
		if utf8.Valid(v) {
			return cutRunes(string(v), tableCutRunes)
		}
		if len(v) > tableCutRunes/2 {
			return cutRunes("x'"+hex.EncodeToString(v[:tableCutRunes/2]), tableCutRunes)
		}
		return "x'" + hex.EncodeToString(v) + "'"
	}
	return v
}

// cutRunes returns the first n runes of s.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := range s {
		if n == 0 {
			return strings.Clone(s[:i])
		}
		n--
	}
	return s
}

// noAuditDBHint says where an audit database is, when audit, logs or
// metrics found none at the path they tried (err wraps fs.ErrNotExist):
// the error alone named evoclaw-data/audit.db and nothing more, to a user
// who had just run the demo, whose trail is in evoclaw-demo.
func noAuditDBHint(command string, err error) string {
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no database file at") {
		return ""
	}
	switch command {
	case "audit", "logs", "metrics":
		return "name the data directory that holds audit.db: --data-dir DIR (the node's; evoclaw-demo for the demo's, " +
			"evoclaw-demo/agents/NAME for one of its agents), or --config evoclaw.toml for its data_dir"
	}
	return ""
}

// reportArgHint says where the argument a report needs is found, for the
// error of a report asked without it.
var reportArgHint = map[string]string{
	"conversation_id": " (the conv= of `evoclaw logs`; `evoclaw audit report tokens-by-conversation` lists conversations)",
	"job":             " (the JOB column of `evoclaw jobs list`)",
}

func cmdAuditReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit report", stderr)
	tf := addTierFlags(fs)
	out := addRowsFlags(fs)
	timeout := addTimeoutFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := checkRowsFlags(out); err != nil {
		return err
	}
	if *timeout < 0 {
		return fmt.Errorf("%w: --timeout must not be negative", errUsage)
	}
	if len(pos) == 1 && pos[0] == "list" {
		for _, r := range sqlite.Reports {
			name := r.Name
			if r.Arg != "" {
				name += " " + strings.ToUpper(r.Arg)
			}
			fmt.Fprintf(stdout, "%-32s %s\n", name, r.Doc)
		}
		return nil
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: audit report needs a report name (evoclaw audit report list)", errUsage)
	}
	r, ok := sqlite.ReportByName(pos[0])
	if !ok {
		return fmt.Errorf("%w: no report %q (evoclaw audit report list)", errUsage, pos[0])
	}
	var qargs []any
	switch {
	case r.Arg != "" && len(pos) != 2:
		return fmt.Errorf("%w: report %s needs its %s%s", errUsage, r.Name, r.Arg, reportArgHint[r.Arg])
	case r.Arg == "" && len(pos) != 1:
		return fmt.Errorf("%w: report %s takes no argument", errUsage, r.Name)
	case r.Arg != "":
		qargs = append(qargs, pos[1])
	}
	if err := tf.check(); err != nil {
		return err
	}
	q := r.Query
	switch *tf.tier {
	case tierCold:
		if q, err = coldReportQuery(ctx, tf, r); err != nil {
			return err
		}
	case tierWarm:
		if q, err = sqlite.ReportSQL(ctx, tf.warmPath(), r); err != nil {
			return err
		}
	}
	return printTier(ctx, tf, out, *timeout, stdout, q, qargs...)
}

// coldReportQuery returns r's SQL for the cold tier: its Query where the
// cold database keeps the report summaries, else its query over the
// records.
func coldReportQuery(ctx context.Context, tf tierFlags, r sqlite.Report) (string, error) {
	c, err := tf.openCold()
	if err != nil {
		return "", err
	}
	defer c.Close()
	ok, err := c.HasSummaries(ctx)
	if err != nil {
		return "", err
	}
	if !ok {
		return r.RawQuery(), nil
	}
	return r.Query, nil
}

func queryCold(ctx context.Context, tf tierFlags, q string, args ...any) (*sqlite.Result, error) {
	c, err := tf.openCold()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	cols, rows, err := c.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = [][]any{}
	}
	return &sqlite.Result{Columns: cols, Rows: rows}, nil
}

// withMerged merges both tiers into a temporary database and calls fn
// with its path; the database is removed when fn returns.
func withMerged(ctx context.Context, tf tierFlags, fn func(merged string) error) error {
	c, err := tf.openCold()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := os.Stat(tf.warmPath()); err != nil {
		return fmt.Errorf("query audit database: %w", err)
	}
	dir, err := os.MkdirTemp("", "evoclaw-audit-all-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	merged, err := cold.MergeTiers(ctx, tf.warmPath(), c, dir)
	if err != nil {
		return err
	}
	return fn(merged)
}

// errChainBroken makes `audit verify` exit non-zero after printing its report.
var errChainBroken = errors.New("audit chain does not verify")

func cmdAuditVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit verify", stderr)
	tf := addTierFlags(fs)
	keyFile := fs.String("key", "", "the key that sealed the warm chain (default: audit.key in --data-dir)")
	unkeyed := fs.Bool("unkeyed", false, "check only the warm chain's consistency, without the key (cannot detect a rewritten chain, a moved start or removed newest records)")
	summaries := fs.Bool("summaries", false, "also check that the warm report summaries match the records (reads every record once more)")
	if err := parseNoArgs(fs, args, "audit verify"); err != nil {
		return err
	}
	if err := tf.check(); err != nil {
		return err
	}
	if *unkeyed && *keyFile != "" {
		return fmt.Errorf("%w: --key and --unkeyed exclude each other", errUsage)
	}
	var (
		broken  []error
		warmRep *auditchain.Report
		err     error
	)
	if *tf.tier != tierCold {
		warmRep, err = sqlite.VerifyChainWith(ctx, tf.warmPath(), sqlite.VerifyOptions{KeyFile: *keyFile, Unkeyed: *unkeyed})
		if err := printVerify(stdout, tierWarm, warmRep, err); err != nil {
			if !errors.Is(err, errChainBroken) {
				return err
			}
			broken = append(broken, err)
		}
		if *summaries {
			switch err := sqlite.VerifySummaries(ctx, tf.warmPath()); {
			case errors.Is(err, sqlite.ErrSummaryMismatch):
				fmt.Fprintf(stdout, "warm: report summaries: BROKEN: %v\n", err)
				broken = append(broken, fmt.Errorf("%w: %w", errChainBroken, err))
			case err != nil:
				return err
			default:
				fmt.Fprintln(stdout, "warm: report summaries: ok, every report matches the records")
			}
		}
	}
	if *tf.tier != tierWarm {
		c, err := tf.openCold()
		if err != nil {
			return err
		}
		defer c.Close()
		chains, err := c.Chains(ctx)
		if err != nil {
			return err
		}
		if len(chains) == 0 {
			fmt.Fprintln(stdout, "cold: no chains shipped yet")
		}
		for _, st := range chains {
			rep, err := c.VerifyChain(ctx, st)
			if err := printVerify(stdout, tierCold, rep, err); err != nil {
				if !errors.Is(err, errChainBroken) {
					return err
				}
				broken = append(broken, err)
			}
			if warmRep != nil && st.ChainID == warmRep.ChainID {
				if err := joinTiers(ctx, stdout, tf.warmPath(), c, warmRep, st); err != nil {
					broken = append(broken, err)
				}
			}
		}
	}
	return errors.Join(broken...)
}

// joinTiers checks that the warm chain continues its cold copy.
func joinTiers(ctx context.Context, w io.Writer, warmPath string, c *cold.Store, warmRep *auditchain.Report, st cold.ChainState) error {
	warmHash := func(ctx context.Context, seq int64) (string, bool, error) {
		parts := make([]string, 0, len(auditchain.Tables))
		for _, t := range auditchain.Tables {
			parts = append(parts, fmt.Sprintf("SELECT hash FROM %s WHERE chain_seq = ?1", t.Name))
		}
		res, err := sqlite.QueryReadOnly(ctx, warmPath, strings.Join(parts, " UNION ALL "), seq)
		if err != nil || len(res.Rows) == 0 {
			return "", false, err
		}
		h, _ := res.Rows[0][0].(string)
		return h, true, nil
	}
	coldHash := func(ctx context.Context, seq int64) (string, bool, error) {
		return c.RecordHash(ctx, st.ChainID, seq)
	}
	err := cold.VerifyJoin(ctx, warmRep, st, warmHash, coldHash)
	if err == nil {
		var pruned []cold.PrunedRange
		if pruned, err = prunedRanges(ctx, warmPath); err == nil {
			err = cold.VerifyPrunedShipped(st, pruned, sqlite.ReasonShipped)
		}
	}
	if err != nil {
		if !errors.Is(err, auditchain.ErrBroken) {
			return err
		}
		fmt.Fprintf(w, "all: BROKEN: %v\n", err)
		return fmt.Errorf("%w: %v", errChainBroken, err)
	}
	fmt.Fprintf(w, "all: chain %s: cold holds chain_seq %d..%d, warm %d..%d: the tiers join\n",
		auditchain.Printable(st.ChainID), st.FirstSeq, st.ShippedSeq, warmRep.StartSeq+1, warmRep.HeadSeq)
	return nil
}

// prunedRanges reads what each warm retention pass deleted, oldest first.
func prunedRanges(ctx context.Context, warmPath string) ([]cold.PrunedRange, error) {
	res, err := sqlite.QueryReadOnly(ctx, warmPath, `SELECT coalesce(lag(chain_seq) OVER (ORDER BY chain_seq), 0) + 1, chain_seq,
  coalesce(ts, ''), coalesce(reason, '')
FROM chain_checkpoints WHERE typeof(chain_seq) = 'integer' ORDER BY chain_seq`)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return nil, nil // a database from before the chain (schema v2): no retention pass
	}
	if err != nil {
		return nil, err
	}
	out := make([]cold.PrunedRange, 0, len(res.Rows))
	for _, r := range res.Rows {
		first, _ := r[0].(int64)
		last, _ := r[1].(int64)
		ts, _ := r[2].(string)
		reason, _ := r[3].(string)
		out = append(out, cold.PrunedRange{First: first, Last: last, TS: ts, Reason: reason})
	}
	return out, nil
}

// printVerify prints one tier's verification report and turns a broken
// chain into errChainBroken.
func printVerify(w io.Writer, tier string, rep *auditchain.Report, err error) error {
	var be *auditchain.BreakError
	if err != nil && !errors.Is(err, auditchain.ErrBroken) {
		return err
	}
	if rep != nil {
		from := "genesis"
		if rep.StartSeq > 0 {
			from = fmt.Sprintf("checkpoint at chain_seq %d", rep.StartSeq)
		}
		fmt.Fprintf(w, "%s: chain %s: %d records verified from %s; head chain_seq %d hash %s\n",
			tier, auditchain.Printable(rep.ChainID), rep.Verified, from, rep.HeadSeq, rep.HeadHash)
		if rep.Unchained > 0 {
			fmt.Fprintf(w, "%s: %d rows predate the hash chain (schema before v3) and cannot be verified\n", tier, rep.Unchained)
		}
	}
	if err != nil {
		fmt.Fprintf(w, "%s: BROKEN: %v\n", tier, err)
		if errors.As(err, &be) {
			return fmt.Errorf("%w: %s tier, first broken record %s %s (chain_seq %d)", errChainBroken, tier,
				auditchain.Printable(be.Table), auditchain.Printable(be.RecordID), be.Seq)
		}
		return fmt.Errorf("%w: %s tier: %v", errChainBroken, tier, err)
	}
	switch {
	case rep != nil && rep.KeyID != "":
		fmt.Fprintf(w, "%s: ok; its start and head are authenticated by key %s\n", tier, rep.KeyID)
	case tier == tierWarm:
		fmt.Fprintf(w, "%s: ok, consistency only: without the key its start and head are not authenticated\n", tier)
	default:
		fmt.Fprintf(w, "%s: ok\n", tier)
	}
	return nil
}

// cmdAuditStatus prints the state of a node's warm audit database: chain
// head, retention, cold shipping lag and size. It reads the file, so it
// works whether or not the node runs.
func cmdAuditStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit status", stderr)
	dataDir, conf := addDataDirFlags(fs)
	asJSON := fs.Bool("json", false, "print as JSON")
	coldURL := fs.String("cold-url", coldURLDefault(), "URL of the cold tier, only to say whether there is one (default: [audit.cold] url of --config, else $"+coldURLEnv+")")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := conf.apply(fs, dataDir, coldURL); err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: audit status takes no arguments, got %q", errUsage, pos)
	}
	coldTier := *coldURL != ""
	st, err := sqlite.ReadStatus(ctx, filepath.Join(*dataDir, orchestrator.AuditFile))
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"schema_version": st.SchemaVersion, "chain_id": st.ChainID, "head_seq": st.HeadSeq,
			"chain_start": st.ChainStart, "records": st.Records, "oldest": timeOrNil(st.Oldest),
			"cold_tier": coldTier, "shipped_seq": st.ShippedSeq, "unshipped": st.Lag(), "prune_passes": st.Checkpoints,
			"last_prune": timeOrNil(st.LastPrune), "used_bytes": st.UsedBytes,
		})
	}
	fmt.Fprintf(stdout, "schema version  %d\n", st.SchemaVersion)
	fmt.Fprintf(stdout, "chain           %s, head chain_seq %d\n", auditchain.Printable(st.ChainID), st.HeadSeq)
	fmt.Fprintf(stdout, "records         %d warm, oldest %s\n", st.Records, timeText(st.Oldest))
	fmt.Fprintf(stdout, "retention       %d passes, records up to chain_seq %d deleted, last %s\n", st.Checkpoints, st.ChainStart, timeText(st.LastPrune))
	switch {
	case coldTier:
		fmt.Fprintf(stdout, "cold tier       shipped up to chain_seq %d, %d records waiting\n", st.ShippedSeq, st.Lag())
	case st.ShippedSeq > 0:
		fmt.Fprintf(stdout, "cold tier       none configured (--config, --cold-url); shipped up to chain_seq %d before\n", st.ShippedSeq)
	default:
		fmt.Fprintf(stdout, "cold tier       none configured (--config, --cold-url): nothing is shipped\n")
	}
	fmt.Fprintf(stdout, "size            %d bytes in use\n", st.UsedBytes)
	return nil
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

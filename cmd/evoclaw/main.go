// Command evoclaw is the one binary of an evoclaw node: orchestrator
// (serve), edge agent (edge), the offline demo, and operator commands.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/evoclaw/evoclaw/orchestrator/auditquery"
	"github.com/evoclaw/evoclaw/skills/toolbox"
)

const usage = `evoclaw: edge-first LLM agent runtime

usage:
  evoclaw demo   [--data-dir DIR]           the whole system offline: broker, 2 edge agents, a scripted conversation, its audit trail
  evoclaw serve  [--config evoclaw.toml] [--data-dir DIR]   run an orchestrator node
  evoclaw edge   --config agent.toml [--data-dir DIR]       run an edge agent
  evoclaw chat   [--data-dir DIR | --node URL] [--conversation ID] [--quiet] ["question ..."]
                 ask the node: one question and exit; with none, a REPL on a terminal (/new, /help, /quit) or one chat per piped line.
                 Tool progress shows live; Ctrl-C cancels the running chat. Answers go to stdout; the conversation's id
                 to give --conversation is said on stderr at the end
  evoclaw status [--data-dir DIR | --node URL] [--tools] [--json]   the running node: agents, their tools, LLM links, audit tiers, broker clients
                 (chat and status find the node's API and token in DIR, as written by serve; --node URL or $EVOCLAW_NODE,
                 --token-file FILE or $EVOCLAW_TOKEN override)
  evoclaw jobs list | add ID --schedule "0 6 * * *" --prompt TEXT [--agents a,b] [--tools x,y] [--timeout 10m] [--missed catch_up|skip] [--catch-up-window 1h]
               | remove ID | pause ID | resume ID | run-now ID | history [ID] [--limit N]   scheduled tasks of the running node
  evoclaw approvals list [--state pending|all|...] | approve ID | deny ID [--by NAME] [--note TEXT]   tool calls waiting for a person
                 (jobs and approvals find the node like chat; changes and decisions are recorded --by NAME, default $USER)
  evoclaw agents add NAME [--config evoclaw.toml] [--data-dir DIR] [--role agent|orchestrator] [--rotate] [--broker URL]   create broker credentials; prints agent.toml lines
  evoclaw agents list|remove NAME [--config evoclaw.toml] [--data-dir DIR]   the broker's identities
  evoclaw audit sql [--data-dir DIR] [--tier warm|cold|all] [--json|--csv] [--timeout 60s] "SELECT ..."   read-only SQL over the audit trail
  evoclaw audit verify [--data-dir DIR] [--tier warm|cold|all]   check the audit hash chain; names the first broken record
  evoclaw audit report NAME [ARG] [--tier warm|cold|all]   ready-made audit queries (evoclaw audit report list)
  evoclaw audit status [--data-dir DIR] [--cold-url URL] [--json]   chain head, retention, records waiting for the cold tier
  evoclaw audit backup [--data-dir DIR] [--all] [--force] DEST   a verified copy of the audit trail (or, --all, of the data directory), taken while the node runs
  evoclaw logs   [--data-dir DIR | --node URL [--token-file FILE]] [--filter=tool|llm|message|event] [--agent A] [--limit N] [--follow]   newest audited records
  evoclaw metrics --tools [--data-dir DIR] [--json|--csv]   calls, errors and latency per tool and agent
  evoclaw bench  [--calls N] [--concurrency N] [--tools process,builtin] [--startup=false] [--floor N]   round-trip latency and its ratio to this machine's floor, throughput, RSS and start time across real processes
  evoclaw load   [--agents 200] [--conversations 1000] [--cluster 1,2,3]   one orchestrator (or clusters of those sizes) against simulated agents and concurrent conversations
  evoclaw chaos  SCENARIO [--calls N] [--data-dir DIR] | list   fault scenarios against real processes: broker-restart, edge-kill, network-cut, orchestrator-kill, node-kill
  evoclaw cluster ca --dir DIR [--days N]  a private CA for the mutual TLS of a cluster's actor port ([cluster.tls]): DIR/ca.crt, DIR/ca.key
  evoclaw cluster cert --dir DIR NODE_ID [--host H]... [--days N]   a node's certificate signed by DIR's CA: DIR/NODE_ID.crt, .key
  evoclaw skills install NAME DIR           write a skill shipped in the binary to DIR/NAME
  evoclaw skills validate DIR...            check every skill.toml; exit 1 when any is broken
  evoclaw skills list [--permissions a,b] DIR... | --config agent.toml   the tools an agent would offer, and why others are not
  evoclaw version
  evoclaw help [COMMAND]                    this text, or one command's lines; evoclaw COMMAND --help adds its flags

exit status: 0 done, 1 failed, 2 usage error (unknown command, flag or argument; a bad flag value), 130 interrupted
`

// version is set at build time with -ldflags "-X main.version=..." (see
// cmd/release); empty otherwise, and `evoclaw version` then derives one
// from the declared version (VERSION) and the commit (version.go).
var version string

func main() {
	// Each git tool call of an agent in this process runs in a child of
	// this binary (run answers toolbox.GitChildCommand), under a memory
	// bound: a crafted object cannot take the agent's memory.
	toolbox.RunGitInChildren()
	if runsAuditStatement(os.Args[1:]) {
		// The statement is anyone's SQL and may take every core, and the
		// memory and temporary files SQLite wants for it, on the machine
		// the node runs on: it yields the CPU to the node, and when memory
		// runs short the kernel ends it rather than the node. Here, not in
		// the command: both hold for the whole process.
		auditquery.Yield()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// runsAuditStatement reports whether args run an audit statement in this
// process (audit sql, audit report).
func runsAuditStatement(args []string) bool {
	return len(args) >= 2 && args[0] == "audit" && (args[1] == "sql" || args[1] == "report")
}

var (
	// errUsage marks errors that should print the usage text.
	errUsage = errors.New("usage")
	// errInterrupted ends a command the user interrupted: exit status 130,
	// as a shell reports a command ended by SIGINT.
	errInterrupted = errors.New("interrupted")
)

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if args[0] == auditquery.ChildCommand {
		// A statement of the node's POST /v1/audit/sql (serve starts it).
		return auditquery.Child(os.Stdin, stdout)
	}
	if args[0] == toolbox.GitChildCommand {
		// A git tool call of an agent in this process (main).
		return toolbox.GitChild(os.Stdin, stdout)
	}
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if args[0] == "chat" {
		sigs = sigs[1:] // chat handles Ctrl-C itself: it cancels a chat, not the command
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	defer startProfile(args[0], stderr)()
	var err error
	switch cmd, ok := commands[args[0]]; {
	case ok && len(args) == 2 && groups[args[0]] && isHelp(args[1]):
		// A command of subcommands has no flags of its own to list: say
		// where its subcommands' are.
		fmt.Fprint(stdout, "usage:\n"+usageOf(args[0])+"(evoclaw "+args[0]+" COMMAND --help lists its flags)\n")
	case ok:
		err = cmd(ctx, args[1:], stdout, stderr)
	case args[0] == "version" || args[0] == "--version":
		fmt.Fprintln(stdout, currentBuild())
	case args[0] == "help" && len(args) == 2 && isHelp(args[1]):
		fmt.Fprint(stdout, usage) // `evoclaw help --help`: help has no flags
	case args[0] == "help" && len(args) == 2:
		if lines := usageOf(args[1]); lines != "" {
			sub := map[bool]string{true: " COMMAND"}[groups[args[1]]]
			fmt.Fprint(stdout, "usage:\n"+lines+"(evoclaw "+args[1]+sub+" --help lists its flags)\n")
		} else {
			err = fmt.Errorf("%w: unknown command %q", errUsage, args[1])
		}
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	if err == nil {
		return 0
	}
	if h := (*helpRequest)(nil); errors.As(err, &h) {
		fmt.Fprint(stdout, h.text())
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if hint := noServeConfigHint(args[0], err); hint != "" {
		err = fmt.Errorf("%w (%s)", err, hint) // one line, as every error of a config file
	}
	fmt.Fprintln(stderr, "evoclaw:", err)
	if hint := cmp.Or(brokerRefusedHint(args[0], err), noAuditDBHint(args[0], err)); hint != "" {
		fmt.Fprintln(stderr, hint)
	}
	if errors.Is(err, errInterrupted) {
		return 130
	}
	if errors.Is(err, errUsage) {
		if lines := usageOf(args[0]); lines != "" {
			fmt.Fprint(stderr, "usage:\n"+lines+"(evoclaw help: every command)\n")
		} else {
			fmt.Fprint(stderr, usage)
		}
		return 2
	}
	return 1
}

// noServeConfigHint says what to do when serve's --config names no file:
// the error alone ("open evoclaw.toml: no such file or directory") did
// not say that the README's lines are to be written there first, nor that
// serve runs without one.
func noServeConfigHint(command string, err error) string {
	if command != "serve" || !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "load ") {
		return ""
	}
	return "write that file first, the [llm] lines of README.md for a start, docs/CONFIG.md has every key; " +
		"or leave out --config to run on the built-in defaults"
}

// groups are the commands whose first argument names a subcommand
// (agents prints its own usage).
var groups = map[string]bool{"audit": true, "jobs": true, "approvals": true, "skills": true, "cluster": true}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "--help" || arg == "-help"
}

// usageOf is the part of the usage text about command ("chat", or
// "audit sql" for a subcommand): its lines and the lines that continue
// them; "" for a command the text does not name.
func usageOf(command string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(usage, "\n") {
		if rest, ok := strings.CutPrefix(line, "  evoclaw "); ok {
			in = strings.HasPrefix(strings.Join(strings.Fields(rest), " ")+" ", command+" ")
		} else if !strings.HasPrefix(line, "   ") {
			in = false
		}
		if in {
			b.WriteString(line)
		}
	}
	return b.String()
}

// commands runs each subcommand but version and help. The children of
// load and chaos (load-agents, chaos-node, broker) are not for people.
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"demo":        cmdDemo,
	"serve":       cmdServe,
	"edge":        cmdEdge,
	"audit":       cmdAudit,
	"agents":      withoutContext(cmdAgents),
	"chat":        cmdChat,
	"status":      cmdStatus,
	"logs":        cmdLogs,
	"jobs":        cmdJobs,
	"approvals":   cmdApprovals,
	"metrics":     cmdMetrics,
	"bench":       cmdBench,
	"load":        cmdLoad,
	"load-agents": cmdLoadAgents,
	"chaos":       cmdChaos,
	"chaos-node":  cmdChaosNode,
	"broker":      cmdBroker,
	"skills":      withoutContext(cmdSkills),
	"cluster":     cmdCluster,
}

// withoutContext adapts a command that needs no context.
func withoutContext(cmd func(args []string, stdout, stderr io.Writer) error) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		return cmd(args, stdout, stderr)
	}
}

// newFlags returns a flag set that reports errors instead of exiting or
// printing: run prints a parse error once, with the command's usage
// lines, and a request for help on stdout (helpRequest). The writer is
// unused.
func newFlags(name string, _ io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("evoclaw "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// helpRequest is the error of a command asked for help (-h, --help):
// run prints its text on stdout and exits 0.
type helpRequest struct{ fs *flag.FlagSet }

func (h *helpRequest) Error() string { return "help requested" }
func (h *helpRequest) Unwrap() error { return flag.ErrHelp }

// text is the command's usage lines (its subcommand's, when the usage
// text names it alone) and its flags.
func (h *helpRequest) text() string {
	name := strings.TrimPrefix(h.fs.Name(), "evoclaw ")
	lines := usageOf(name)
	if first, _, _ := strings.Cut(name, " "); lines == "" {
		lines = usageOf(first)
	}
	var b strings.Builder
	b.WriteString("usage:\n" + lines)
	flags := 0
	h.fs.VisitAll(func(*flag.Flag) { flags++ })
	if flags > 0 {
		b.WriteString("flags:\n")
		h.fs.SetOutput(&b)
		h.fs.PrintDefaults()
		h.fs.SetOutput(io.Discard)
	}
	return b.String()
}

// parseFlags parses args allowing flags after positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpRequest{fs}
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseNoArgs parses args, which must be flags only; name says whose.
func parseNoArgs(fs *flag.FlagSet, args []string, name string) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		hint := ""
		if fs.Lookup("config") != nil && strings.HasSuffix(pos[0], ".toml") {
			hint = fmt.Sprintf(" (a configuration file goes after --config: --config %s)", pos[0])
		}
		return fmt.Errorf("%w: %s takes no arguments, got %q%s", errUsage, name, pos, hint)
	}
	return nil
}

// newTable returns the writer of a table on w, its columns separated by
// tabs, with header (unless empty) as its first line; Flush prints it.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header != "" {
		fmt.Fprintln(tw, header)
	}
	return tw
}

func logger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

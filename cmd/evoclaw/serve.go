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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/evoclaw/evoclaw/edge"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/auditquery"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	config := fs.String("config", "", "path to evoclaw.toml (default: built-in defaults)")
	dataDir := fs.String("data-dir", "", "directory for the node's data (overrides data_dir)")
	if err := parseNoArgs(fs, args, "serve"); err != nil {
		return err
	}
	noMemProfile()
	softMemoryLimit()
	gcReady := startupGC()
	var cfg orchestrator.Config
	if *config != "" {
		var err error
		if cfg, err = orchestrator.LoadConfig(*config); err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil { // its secrets, before anything is written
			return fmt.Errorf("%s: %w", *config, err)
		}
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	cfg.Version = currentBuild().Version
	cfg.DataDir = cmp.Or(cfg.DataDir, orchestrator.DefaultDataDir)
	if err := useDataTempDir(cfg.DataDir); err != nil {
		return err
	}
	cfg.HTTP.Listen = cmp.Or(cfg.HTTP.Listen, orchestrator.DefaultHTTPListen)
	log := logger(stderr, slog.LevelInfo)
	// Each statement of POST /v1/audit/sql runs in a child of this binary,
	// under its own memory bound (orchestrator/auditquery).
	queries, err := auditquery.NewRunner()
	if err != nil {
		return err
	}
	node, err := orchestrator.Start(ctx, cfg, orchestrator.Options{Logger: log, AuditQuery: queries.Run})
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w\n%s", err, addrInUse(cfg, err))
	}
	if err != nil {
		return dataDirError(cfg.DataDir, err)
	}
	defer node.Close()
	api := "off"
	if a := node.HTTPAddr(); a != "" {
		api = "http://" + a
	}
	fmt.Fprintf(stdout, "evoclaw orchestrator ready: broker %s, audit %s, api %s\n", node.BrokerURL(), node.AuditPath(), api)
	if c := auditCaveat(node.Ready(), cfg.DataDir); c != "" {
		fmt.Fprintf(stdout, "evoclaw orchestrator: %s\n", c)
	}
	later := make(chan struct{})
	if c := llmCaveat(node.Ready()); c != "" {
		fmt.Fprintf(stdout, "evoclaw orchestrator: %s\n", c)
		close(later)
	} else {
		// The first checks of the model servers may still be running (a
		// server that takes the connection and says nothing holds one for
		// probe_timeout): what they find is said then, under the ready line.
		go func() {
			defer close(later)
			llmCaveatLater(ctx, stdout, node, cfg.LLM.LongestProbe())
		}()
	}
	go func() {
		gcReady()
		settle(ctx)
	}()
	<-ctx.Done()
	<-later
	fmt.Fprintln(stdout, "evoclaw orchestrator stopping")
	return node.Close()
}

// addrInUse says what to do when a listener's address is taken: no flag
// moves a listener, so it names the key of evoclaw.toml that does.
func addrInUse(cfg orchestrator.Config, err error) string {
	key := "[broker] listen, tls_listen, [http] listen or [cluster] port"
	for _, l := range []struct{ key, addr string }{
		{"[broker] listen", cmp.Or(cfg.Broker.Listen, orchestrator.DefaultBrokerListen)},
		{"[broker] tls_listen", cfg.Broker.TLSListen},
		{"[http] listen", cfg.HTTP.Listen},
	} {
		if l.addr != "" && strings.Contains(err.Error(), " "+l.addr+": ") {
			key = l.key
			break
		}
	}
	return "another process listens on that address (a node already running?): give this node a free one with " +
		key + " in evoclaw.toml, passed with --config (docs/CONFIG.md)"
}

func cmdEdge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := newFlags("edge", stderr)
	config := fset.String("config", "agent.toml", "path to agent.toml")
	dataDir := fset.String("data-dir", "", "directory for the agent's data (overrides data_dir)")
	if err := parseNoArgs(fset, args, "edge"); err != nil {
		return err
	}
	noMemProfile()
	softMemoryLimit()
	cfg, err := edge.LoadConfig(*config)
	if errors.Is(err, fs.ErrNotExist) && !flagSet(fset, "config") {
		return fmt.Errorf("%w (an edge agent needs its agent.toml: name it with --config, or write one here; "+
			"`evoclaw agents add NAME` on the node prints its lines, docs/CONFIG.md has every key)", err)
	}
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil { // its secrets, before anything is written
		return fmt.Errorf("%s: %w", *config, err)
	}
	if *dataDir != "" {
		cfg.DataDir = *dataDir
	}
	cfg.Version = currentBuild().Version
	// Before edge.New, whose sandbox probe makes a scratch directory.
	if err := useDataTempDir(cfg.DataDir); err != nil {
		return err
	}
	log := logger(stderr, slog.LevelInfo)
	a, err := edge.New(cfg, log)
	if err != nil {
		return dataDirError(cfg.DataDir, err)
	}
	// No start-up goal here: an agent's start-up stays under the
	// collector's 4 MB minimum. Settling and idle trimming as for serve
	// (startgc.go), until Run returns (a shutdown command ends Run, not
	// ctx).
	trimCtx, stopTrim := context.WithCancel(ctx)
	var trimming sync.WaitGroup
	defer trimming.Wait()
	defer stopTrim()
	a.Ready = func() {
		fmt.Fprintf(stdout, "evoclaw edge agent %s ready: broker %s, tools %v\n", cfg.AgentID, cfg.MQTT.Broker, a.ToolNames())
		// An agent that finds its database's log files (left by a crash)
		// opens it on a full disk, and then refuses every command.
		if p := a.AuditProblem(); p != "" {
			fmt.Fprintf(stdout, "evoclaw edge agent %s: NOT READY: the audit trail cannot write (%s; data directory %s); every command is refused until it can, "+
				"which needs no restart once there is room (docs/INSTALL.md, a full or read-only card)\n", cfg.AgentID, p, cfg.DataDir)
		}
		trimming.Go(func() { settle(trimCtx) })
	}
	return dataDirError(cfg.DataDir, a.Run(ctx))
}

// auditCaveat is what follows the ready line when the audit trail cannot
// write at start: a node that finds its database's log and shared-memory
// files (left by a power cut or a kill) opens it on a full disk, and then
// refuses every chat until there is room, which "ready" must not hide.
func auditCaveat(r orchestrator.Readiness, dataDir string) string {
	for _, c := range r.Checks {
		if c.Name == orchestrator.CheckAudit && !c.OK {
			return fmt.Sprintf("NOT READY: %s (data directory %s); every chat is refused until the audit trail can write, "+
				"which needs no restart (docs/INSTALL.md, a full or read-only card)", c.Reason, dataDir)
		}
	}
	return ""
}

// llmCaveat is what follows the ready line when the node cannot answer
// chats for want of a model (no [llm]): its API, audit and broker serve,
// but /readyz says not ready and every chat is refused, which "ready" must
// not hide.
func llmCaveat(r orchestrator.Readiness) string {
	for _, c := range r.Checks {
		if c.Name == orchestrator.CheckLLM && !c.OK {
			return c.Reason
		}
	}
	return ""
}

// llmCaveatLater waits for the first checks of the model servers, which
// take at most probe (none: 0), and then says under the ready line what
// llmCaveat would have said, if anything: a node that printed "ready"
// while its only model server held the check and never answered said
// nothing more on its stdout.
func llmCaveatLater(ctx context.Context, stdout io.Writer, node *orchestrator.Node, probe time.Duration) {
	if probe <= 0 {
		return
	}
	t := time.NewTimer(probe + time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	if c := llmCaveat(node.Ready()); c != "" {
		fmt.Fprintf(stdout, "evoclaw orchestrator: %s\n", c)
	}
}

// flagSet reports whether the command line set the flag name.
func flagSet(f *flag.FlagSet, name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

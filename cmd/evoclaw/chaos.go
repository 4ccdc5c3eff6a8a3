package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/evoclaw/evoclaw/orchestrator/chaos"
)

// cmdChaos runs one fault scenario against real processes on this machine
// and prints what it did and found; it fails when a check fails.
func cmdChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos", stderr)
	calls := fs.Int("calls", chaos.DefaultCalls, "tool calls before the fault and after recovery (those during it come on top)")
	dir := fs.String("data-dir", "", "keep the run's databases and logs here (default: a temporary directory, removed)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: chaos wants one scenario name, or list", errUsage)
	}
	if *calls < 0 {
		return fmt.Errorf("%w: --calls %d must not be negative (0: the default, %d)", errUsage, *calls, chaos.DefaultCalls)
	}
	if pos[0] == "list" {
		tw := newTable(stdout, "")
		for _, s := range chaos.Scenarios() {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Summary)
		}
		return tw.Flush()
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	o := chaos.Options{Binary: exe, Calls: *calls, Dir: *dir, Out: stdout}
	if *dir != "" {
		if err := os.MkdirAll(*dir, 0o700); err != nil {
			return err
		}
		logf, err := os.OpenFile(filepath.Join(*dir, "orchestrator.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer logf.Close()
		o.Logger = logger(logf, slog.LevelInfo)
	}
	rep, err := chaos.Run(ctx, pos[0], o)
	if errors.Is(err, chaos.ErrUnknownScenario) {
		return fmt.Errorf("%w: %v (evoclaw chaos list)", errUsage, err)
	}
	if rep != nil {
		rep.Write(stdout)
	}
	if err != nil {
		return err
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("chaos %s: %d checks failed", pos[0], len(rep.Problems))
	}
	return nil
}

// cmdBroker runs the embedded broker alone: the broker child process that
// `evoclaw chaos broker-restart` kills and restarts. Not for people.
func cmdBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("broker", stderr)
	listen := fs.String("listen", "127.0.0.1:1883", "host:port to listen on")
	anon := fs.Bool("allow-anonymous", false, "let clients in without credentials (loopback addresses only)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	return chaos.ServeBroker(ctx, *listen, *anon, stdout, logger(stderr, slog.LevelWarn))
}

// cmdChaosNode runs the orchestrator child process of `evoclaw chaos
// orchestrator-kill`, driven by JSON lines on stdin. Not for people.
func cmdChaosNode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos-node", stderr)
	dir := fs.String("data-dir", "", "the node's data directory")
	listen := fs.String("listen", "127.0.0.1:0", "the embedded broker's host:port")
	var no chaos.NodeOptions
	fs.StringVar(&no.NodeID, "node-id", "", "the node's id (node-kill)")
	fs.StringVar(&no.BrokerURL, "broker-url", "", "an external broker instead of the embedded one (node-kill)")
	etcd := fs.String("etcd", "", "etcd endpoint: join a cluster (node-kill)")
	fs.IntVar(&no.Cluster.Port, "cluster-port", 0, "the cluster's actor port (node-kill)")
	fs.StringVar(&no.Cluster.StateURL, "state-url", "", "the cluster's sqld (node-kill)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("%w: --data-dir is required", errUsage)
	}
	if *etcd != "" {
		no.Cluster.Etcd, no.Cluster.Name = []string{*etcd}, "chaos"
	}
	return chaos.ServeNode(ctx, *dir, *listen, no, os.Stdin, stdout, logger(stderr, slog.LevelInfo))
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evoclaw/evoclaw/edge/rate"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
	"github.com/evoclaw/evoclaw/skills/shipped"
)

const benchTranscript = `{"name":"bench","turns":[
 {"content":"","tool_calls":[{"id":"c1","name":"bench-edge__noop","arguments":{}}]},
 {"content":"{{result c1}}"}]}`

// benchBuiltinTranscript calls the agent's built-in todoread: a tool that
// runs inside the agent, with no process to start.
const benchBuiltinTranscript = `{"name":"bench-builtin","turns":[
 {"content":"","tool_calls":[{"id":"c1","name":"bench-edge__todoread","arguments":{}}]},
 {"content":"{{result c1}}"}]}`

// benchBuiltinPrompt is the user message of the built-in tool's chats.
const benchBuiltinPrompt = "builtin"

// benchProvider answers the built-in tool's chats with its own transcript
// and every other chat with the process tool's.
type benchProvider struct{ shell, builtin *scripted.Provider }

func (p benchProvider) Name() string { return p.shell.Name() }

func (p benchProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if len(req.Messages) > 0 && req.Messages[0].Content == benchBuiltinPrompt {
		return p.builtin.Complete(ctx, req)
	}
	return p.shell.Complete(ctx, req)
}

// cmdBench measures, across real processes on this machine: start-up time
// and idle RSS of an orchestrator (with its embedded broker and SQLite) and
// of an edge agent, then the full round trip of tool calls
// (orchestrator → broker → edge process → tool process → back, audited on
// both sides) as latency percentiles and calls per second.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	calls := fs.Int("calls", 2000, "tool-call round trips to measure")
	warmup := fs.Int("warmup", 100, "round trips before measuring")
	conc := fs.Int("concurrency", 1, "round trips in flight at once")
	auditSync := fs.String("audit-sync", "normal", "audit durability of both sides: normal or full")
	idle := fs.Duration("idle", 0, "instead of round trips: an orchestrator and an edge agent left idle this long (e.g. 10m), their private memory and storage writes read 21 times")
	tools := fs.String("tools", "process,builtin", "which round trips to measure, comma-separated: process (a /bin/sh tool), builtin (a tool with no process)")
	startup := fs.Bool("startup", true, "measure start-up time and idle memory of both processes first")
	floorN := fs.Int("floor", 1000, "after the round trips, measure this machine's floor with this many of each (an MQTT round trip across processes, a spawn of the tool, a commit) and print each round trip's ratio to it; 0: none")
	echo := fs.String("echo", "", "run as the echo process of the MQTT floor for the broker at this URL (the bench starts it)")
	if err := parseNoArgs(fs, args, "bench"); err != nil {
		return err
	}
	if *echo != "" {
		return benchEcho(ctx, *echo, stdout)
	}
	if *floorN < 0 {
		return fmt.Errorf("%w: --floor must not be negative", errUsage)
	}
	if *idle < 0 {
		return fmt.Errorf("%w: --idle must not be negative", errUsage)
	}
	if *idle > 0 {
		return benchIdle(ctx, *idle, stdout)
	}
	if *calls <= 0 || *conc <= 0 || *warmup < 0 {
		return fmt.Errorf("%w: --calls and --concurrency must be positive", errUsage)
	}
	kinds, err := parseBenchTools(*tools)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "evoclaw-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	say("evoclaw bench: %d round trips, concurrency %d, audit_sync=%s", *calls, *conc, *auditSync)

	// 1. An orchestrator process alone: start-up time and idle memory.
	var up startupFigures
	if *startup {
		if up, err = benchStartup(ctx, dir, *auditSync); err != nil {
			return err
		}
	}

	// 2. The in-process orchestrator the round trips go through.
	shell, err := scripted.Parse([]byte(benchTranscript))
	if err != nil {
		return err
	}
	builtin, err := scripted.Parse([]byte(benchBuiltinTranscript))
	if err != nil {
		return err
	}
	p := benchProvider{shell: shell, builtin: builtin}
	// The agent's inbound rate limit (50 messages/s by default) is off: a
	// round trip takes a few milliseconds, so the bench would otherwise
	// measure the limiter dropping reports, not the round trip.
	node, err := orchestrator.Start(ctx, orchestrator.Config{DataDir: filepath.Join(dir, "orch"), AuditSync: *auditSync,
		Broker:  orchestrator.BrokerConf{Listen: "127.0.0.1:0", BrokerSecurity: orchestrator.BrokerSecurity{AllowAnonymous: true}},
		Inbound: orchestrator.InboundConf{InboundLimits: rate.InboundLimits{MessagesPerSecond: -1, BytesPerSecond: -1}}},
		orchestrator.Options{Provider: p, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer node.Close()

	// 3. An edge agent process: time to ready and idle memory.
	benchSkill, err := shipped.Install("bench", filepath.Join(dir, "skills"))
	if err != nil {
		return err
	}
	edgeProc, err := startBenchEdge(ctx, dir, fmt.Sprintf("agent_id = \"bench-edge\"\ndata_dir = \"edge\"\naudit_sync = %q\n[mqtt]\nbroker = %q\n[skills]\ndirs = [\"skills\"]\n[builtin]\ngroups = [\"todo\"]\n",
		*auditSync, node.BrokerURL()))
	if err != nil {
		return err
	}
	defer edgeProc.Stop()
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = node.WaitForAgents(wctx, 1)
	cancel()
	if err != nil {
		return err
	}
	var edgeMem memKB
	if *startup {
		time.Sleep(500 * time.Millisecond)
		if edgeMem, err = readMem(edgeProc.Pid()); err != nil {
			return err
		}
	}

	// 4. Round trips: the process tool, then the built-in one.
	var seq atomic.Int64
	round := func(prompt string, check func(string) bool) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			id := fmt.Sprintf("b%d", seq.Add(1))
			start := time.Now()
			// A region per round trip: an execution trace (EVOCLAW_TRACE)
			// shows where each begins and ends beside GC and scheduling.
			region := trace.StartRegion(ctx, "round trip")
			ans, err := node.Chat(ctx, id, prompt)
			region.End()
			if err != nil {
				return 0, err
			}
			if !check(ans.Text) {
				return 0, fmt.Errorf("round trip %s answered %q", id, ans.Text)
			}
			return time.Since(start), nil
		}
	}
	var shellRT, builtinRT roundTrips
	if kinds.process {
		if shellRT, err = measureRoundTrips(round("go", func(s string) bool { return s == "ok" }), *warmup, *calls, *conc); err != nil {
			return err
		}
	}
	if kinds.builtin {
		builtinRT, err = measureRoundTrips(round(benchBuiltinPrompt, func(s string) bool { return s != "" && !strings.Contains(s, "Error") }), *warmup, *calls, *conc)
		if err != nil {
			return err
		}
	}

	var floor floorFigures
	if *floorN > 0 {
		startEcho := func() (func(), error) { return startBenchEcho(ctx, node.BrokerURL()) }
		if floor, err = measureFloor(ctx, node.BrokerURL(), startEcho, filepath.Join(benchSkill, "bin", "noop"), dir, *auditSync, *floorN); err != nil {
			return err
		}
	}

	say("")
	var process, builtinOnly *roundTrips
	if kinds.process {
		say("round trip (chat → LLM(scripted) → tool call → broker → edge → /bin/sh tool → back, audited both sides)")
		shellRT.print(say)
		process = &shellRT
	}
	if kinds.builtin {
		say("round trip, built-in tool (same, the agent's todoread: no process)")
		builtinRT.print(say)
		builtinOnly = &builtinRT
	}
	if *floorN > 0 {
		floor.print(say, process, builtinOnly)
	}
	if *startup {
		say("processes")
		say("  orchestrator (serve, embedded broker, SQLite): idle %s", up.serveMem)
		say("    ready after exec, median of %d: fresh data directory %s, restart on its data directory %s (the ready line; /healthz 200: %s, %s)",
			up.runs, up.fresh, up.restart, up.freshLive, up.restartLive)
		say("  edge agent:                                    ready in %-8s idle %s", edgeProc.ReadyAfter().Round(100*time.Microsecond), edgeMem)
	}
	return nil
}

// benchKinds says which round trips the bench measures.
type benchKinds struct{ process, builtin bool }

// parseBenchTools reads --tools: a comma-separated list of process and
// builtin, at least one.
func parseBenchTools(list string) (benchKinds, error) {
	var k benchKinds
	for _, name := range strings.Split(list, ",") {
		switch strings.TrimSpace(name) {
		case "process":
			k.process = true
		case "builtin":
			k.builtin = true
		case "":
		default:
			return k, fmt.Errorf("%w: --tools: unknown round trip %q (process, builtin)", errUsage, name)
		}
	}
	if !k.process && !k.builtin {
		return k, fmt.Errorf("%w: --tools names no round trip (process, builtin)", errUsage)
	}
	return k, nil
}

// startupFigures is what benchStartup measured: medians of runs.
type startupFigures struct {
	serveMem                               memKB
	runs                                   int
	fresh, restart, freshLive, restartLive time.Duration
}

// benchStartup measures an orchestrator process alone: its idle memory,
// then its start-up as the median of 5, on a fresh data directory (the
// schema is created) and restarting on an existing one (what a Pi does at
// boot). Two figures each: exec to the first 200 of GET /healthz (the API
// on a fixed port, polled), and exec to the "ready" line, printed once the
// node also holds its subscriptions to the agents.
func benchStartup(ctx context.Context, dir, auditSync string) (startupFigures, error) {
	var f startupFigures
	servConf := filepath.Join(dir, "evoclaw.toml")
	if err := os.WriteFile(servConf, []byte(fmt.Sprintf("data_dir = \"serve\"\naudit_sync = %q\n[broker]\nlisten = \"127.0.0.1:0\"\nallow_anonymous = true\n[http]\nlisten = \"127.0.0.1:0\"\n", auditSync)), 0o600); err != nil {
		return f, err
	}
	serve, err := startChild("serve", []string{"serve", "--config", servConf}, io.Discard)
	if err != nil {
		return f, err
	}
	if _, err := serve.WaitReady(ctx); err != nil {
		return f, err
	}
	time.Sleep(500 * time.Millisecond) // let start-up garbage settle before reading RSS
	if f.serveMem, err = readMem(serve.Pid()); err != nil {
		return f, err
	}
	_ = serve.Stop()
	readyConf, healthz, err := benchReadyConfig(dir, auditSync)
	if err != nil {
		return f, err
	}
	ready := func(data string) (line, live time.Duration, err error) {
		began := time.Now()
		c, err := startChild("serve", []string{"serve", "--config", readyConf, "--data-dir", data}, io.Discard)
		if err != nil {
			return 0, 0, err
		}
		defer c.Stop()
		if live, err = pollHealthz(ctx, healthz, began); err != nil {
			return 0, 0, err
		}
		if _, err := c.WaitReady(ctx); err != nil {
			return 0, 0, err
		}
		return c.ReadyAfter(), live, nil
	}
	var fresh, restarts, freshLive, restartLive []time.Duration
	for i := range 5 {
		d, live, err := ready(filepath.Join(dir, fmt.Sprintf("fresh-%d", i)))
		if err != nil {
			return f, err
		}
		fresh, freshLive = append(fresh, d), append(freshLive, live)
		if d, live, err = ready(filepath.Join(dir, "serve")); err != nil {
			return f, err
		}
		restarts, restartLive = append(restarts, d), append(restartLive, live)
	}
	median := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2].Round(100 * time.Microsecond)
	}
	f.runs = len(fresh)
	f.fresh, f.restart, f.freshLive, f.restartLive = median(fresh), median(restarts), median(freshLive), median(restartLive)
	return f, nil
}

// roundTrips is what measureRoundTrips saw.
type roundTrips struct {
	lat  []time.Duration // sorted
	wall time.Duration
}

// measureRoundTrips runs one warmup times, then calls times with conc in
// flight at once.
func measureRoundTrips(one func() (time.Duration, error), warmup, calls, conc int) (roundTrips, error) {
	for range warmup {
		if _, err := one(); err != nil {
			return roundTrips{}, err
		}
	}
	lat := make([]time.Duration, 0, calls)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(calls))
	began := time.Now()
	for range conc {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				d, err := one()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, d)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(began)
	if firstErr != nil {
		return roundTrips{}, firstErr
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return roundTrips{lat: lat, wall: wall}, nil
}

// print says the percentiles and the rate.
func (r roundTrips) print(say func(string, ...any)) {
	pct := func(q float64) time.Duration { return r.lat[int(q*float64(len(r.lat)-1))] }
	say("  p50 %-10s p90 %-10s p99 %-10s max %s", pct(0.50), pct(0.90), pct(0.99), r.lat[len(r.lat)-1])
	say("  %.0f calls/s over %s", float64(len(r.lat))/r.wall.Seconds(), r.wall.Round(time.Millisecond))
}

// benchReadyConfig writes the config of the start-up runs, the HTTP API on
// a loopback port that was free a moment ago, and returns its path and the
// URL of its /healthz.
func benchReadyConfig(dir, auditSync string) (path, healthz string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	path = filepath.Join(dir, "ready.toml")
	conf := fmt.Sprintf("audit_sync = %q\n[broker]\nlisten = \"127.0.0.1:0\"\nallow_anonymous = true\n[http]\nlisten = %q\n", auditSync, addr)
	return path, "http://" + addr + "/healthz", os.WriteFile(path, []byte(conf), 0o600)
}

// pollHealthz asks url every half millisecond until it answers 200 and
// returns how long after began that was.
func pollHealthz(ctx context.Context, url string, began time.Time) (time.Duration, error) {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(began), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("GET %s: no 200: %w", url, ctx.Err())
		case <-time.After(500 * time.Microsecond):
		}
	}
}

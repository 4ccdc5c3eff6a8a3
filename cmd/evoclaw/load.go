package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/evoclaw/evoclaw/actors"
	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm"
)

// cmdLoad runs one orchestrator (in this process, with its embedded broker
// and SQLite audit) against many simulated edge agents (real MQTT clients
// in a child process) and many concurrent conversations, each making one
// tool call to one agent. It reports throughput, round-trip percentiles
// and the orchestrator's memory per agent and per conversation.
func cmdLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("load", stderr)
	agents := fs.Int("agents", 200, "simulated edge agents (MQTT clients in one child process)")
	convs := fs.Int("conversations", 1000, "conversations started at once, one tool call each")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the whole run")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the conversations to this file (go tool pprof)")
	memProfile := fs.String("memprofile", "", "write a heap profile of the idle conversations to this file, and one of the agents alone to FILE.agents (go tool pprof -base FILE.agents FILE)")
	clusterSizes := fs.String("cluster", "", "run against clusters of these node counts instead, e.g. 1,2,3 (etcd on PATH; docs/CLUSTER.md)")
	if err := parseNoArgs(fs, args, "load"); err != nil {
		return err
	}
	if *agents <= 0 || *agents > 1000 || *convs <= 0 {
		return fmt.Errorf("%w: --agents must be 1..1000 and --conversations positive", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *clusterSizes != "" {
		sizes, err := parseClusterSizes(*clusterSizes)
		if err != nil {
			return err
		}
		return loadCluster(ctx, sizes, *agents, *convs, *timeout, stdout, stderr)
	}
	dir, err := os.MkdirTemp("", "evoclaw-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	say("evoclaw load: %d simulated agents, %d concurrent conversations (scripted LLM: not a model)", *agents, *convs)

	// The simulated agents connect without credentials: a loopback-only
	// broker that allows it, as the load test runs on one machine.
	cfg := orchestrator.Config{DataDir: filepath.Join(dir, "orch"), Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0",
		BrokerSecurity: orchestrator.BrokerSecurity{AllowAnonymous: true}}}
	cfg.Loop.ChatTimeout.Duration = *timeout
	node, err := orchestrator.Start(ctx, cfg, orchestrator.Options{Provider: loadProvider{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer node.Close()
	base, err := settledMem()
	if err != nil {
		return err
	}

	sim, err := startChild("load-agents", []string{"load-agents", "--broker", node.BrokerURL(), "--count", fmt.Sprint(*agents)}, stderr)
	if err != nil {
		return err
	}
	defer sim.Stop()
	if _, err := sim.WaitReady(ctx); err != nil {
		return err
	}
	began := time.Now()
	if err := node.WaitForAgents(ctx, *agents); err != nil {
		return err
	}
	say("agents online with tools listed after %s", time.Since(began).Round(time.Millisecond))
	withAgents, err := settledMem()
	if err != nil {
		return err
	}
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile + ".agents"); err != nil {
			return err
		}
	}

	stopCPU, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	cpuBefore := processCPU()
	r := runConversations(ctx, *convs, *agents, func(i int) *orchestrator.Node { return node })
	cpuBurst := processCPU() - cpuBefore
	if err := stopCPU(); err != nil {
		return err
	}
	lat, wall, failed, firstErr := r.lat, r.wall, r.failed, r.firstErr
	withConvs, err := settledMem()
	if err != nil {
		return err
	}
	// Idle: once the conversations went dormant and the goroutines that
	// ran the burst and the dormancy reached their idle time and ended,
	// what is left is what idle conversations hold.
	idleAfter := actors.DefaultDormantAfter + actors.HotIdle + 2*time.Second
	time.Sleep(idleAfter)
	idleConvs, err := settledMem()
	if err != nil {
		return err
	}
	if err := writeHeapProfile(*memProfile); err != nil {
		return err
	}
	if err := writeProfile("goroutine", *memProfile+".goroutines"); err != nil {
		return err
	}
	pct := r.pct
	say("")
	say("conversations (chat → scripted LLM → tool call over MQTT → simulated agent → back, audited, history stored)")
	say("  %d done, %d failed in %s: %.0f conversations/s", *convs-failed, failed, wall.Round(time.Millisecond), float64(*convs)/wall.Seconds())
	say("  round trip p50 %s  p90 %s  p99 %s  max %s", pct(0.5), pct(0.9), pct(0.99), lat[len(lat)-1].Round(time.Microsecond))
	say("  CPU of this process (orchestrator and the conversations' callers) %s: %.0f µs per conversation",
		cpuBurst.Round(time.Millisecond), float64(cpuBurst.Microseconds())/float64(*convs))
	m := node.Metrics()
	say("  tool calls %d (%d ok, %d errors, %d timeouts)", m.Calls, m.Successes, m.Errors, m.Timeouts)
	say("orchestrator memory (this process, after GC; private = RssAnon)")
	say("  idle, no agents:          %s, Go heap %.1f MB", base.mem, mb(base.heap))
	say("  %4d agents online:       %s, Go heap %.1f MB  → %.1f KB private per agent",
		*agents, withAgents.mem, mb(withAgents.heap), float64(withAgents.mem.Anon-base.mem.Anon)/float64(*agents))
	say("  %4d conversations held:  %s, Go heap %.1f MB  → %.1f KB private per conversation",
		*convs, withConvs.mem, mb(withConvs.heap), float64(withConvs.mem.Anon-withAgents.mem.Anon)/float64(*convs))
	say("  %4d idle %s later:   %s, Go heap %.1f MB  → %.1f KB private per idle conversation",
		*convs, idleAfter, idleConvs.mem, mb(idleConvs.heap), float64(idleConvs.mem.Anon-withAgents.mem.Anon)/float64(*convs))
	goKB := perConv(idleConvs.heap+idleConvs.stacks+idleConvs.runtime, withAgents.heap+withAgents.stacks+withAgents.runtime, *convs)
	say("    of which, per idle conversation: Go heap %.1f KB (live objects %.1f KB), goroutine stacks %.1f KB, runtime's own %.1f KB, outside Go (SQLite's C heap) %.1f KB",
		perConv(idleConvs.heap, withAgents.heap, *convs), perConv(idleConvs.live, withAgents.live, *convs),
		perConv(idleConvs.stacks, withAgents.stacks, *convs), perConv(idleConvs.runtime, withAgents.runtime, *convs),
		float64(idleConvs.mem.Anon-withAgents.mem.Anon)/float64(*convs)-goKB)
	if firstErr != nil {
		return fmt.Errorf("%d of %d conversations failed; first: %w", failed, *convs, firstErr)
	}
	return nil
}

type memPoint struct {
	mem  memKB
	heap uint64 // in spans in use
	// live is the heap's live objects; stacks the goroutines' stacks;
	// runtime the runtime's own structures (spans, GC metadata, buckets).
	live, stacks, runtime uint64
}

// perConv is the growth from a to b in KB, per conversation.
func perConv(b, a uint64, convs int) float64 {
	return (float64(b) - float64(a)) / 1024 / float64(convs)
}

// loadRun is the outcome of runConversations: latencies sorted.
type loadRun struct {
	lat      []time.Duration
	wall     time.Duration
	failed   int
	firstErr error
}

// pct is the q-quantile of the latencies.
func (r loadRun) pct(q float64) time.Duration {
	return r.lat[int(q*float64(len(r.lat)-1))].Round(time.Microsecond)
}

// runConversations starts convs conversations at once, conversation i
// taken by via(i) and calling agent sim-(i mod agents), and waits for all.
func runConversations(ctx context.Context, convs, agents int, via func(i int) *orchestrator.Node) loadRun {
	lat := make([]time.Duration, convs)
	errs := make([]error, convs)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			ans, err := via(i).Chat(ctx, fmt.Sprintf("load-%05d", i), fmt.Sprintf("agent sim-%03d", i%agents))
			lat[i] = time.Since(start)
			if err == nil && !strings.HasPrefix(ans.Text, "done: ok") {
				err = fmt.Errorf("conversation %d answered %q", i, ans.Text)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	r := loadRun{lat: lat, wall: time.Since(began)}
	for _, e := range errs {
		if e != nil {
			r.failed++
			if r.firstErr == nil {
				r.firstErr = e
			}
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return r
}

// settledMem collects garbage, returns freed memory to the OS, and reads
// this process's memory.
func settledMem() (memPoint, error) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m, err := readMem(os.Getpid())
	return memPoint{mem: m, heap: ms.HeapInuse, live: ms.HeapAlloc, stacks: ms.StackInuse,
		runtime: ms.MSpanInuse + ms.MCacheInuse + ms.BuckHashSys + ms.GCSys + ms.OtherSys}, err
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// processCPU is the CPU time (user and system) this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadProvider is the load test's scripted model: it calls the noop tool
// of the agent the user message names, then answers with the result.
type loadProvider struct{}

func (loadProvider) Name() string { return "scripted load driver (not a language model)" }

func (loadProvider) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "done: " + last.Content}}, nil
	}
	agent, ok := strings.CutPrefix(last.Content, "agent ")
	if !ok {
		return llm.Response{}, errors.New("load driver: the user message must be \"agent ID\"")
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
		{ID: "c1", Name: agent + "__noop", Arguments: json.RawMessage(`{}`)}}}}, nil
}

// cmdLoadAgents runs the simulated agents for cmdLoad: each a real MQTT
// client that advertises itself, lists one tool and answers it at once.
func cmdLoadAgents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("load-agents", stderr)
	broker := fs.String("broker", "", "broker URL")
	count := fs.Int("count", 200, "agents")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *broker == "" || *count <= 0 {
		return fmt.Errorf("%w: --broker and a positive --count are required", errUsage)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range *count {
		a, err := startSimAgent(ctx, *broker, fmt.Sprintf("sim-%03d", i), &wg)
		if err != nil {
			return err
		}
		defer a.Close()
	}
	fmt.Fprintf(stdout, "%d simulated agents ready\n", *count)
	<-ctx.Done()
	return nil
}

// startSimAgent connects one simulated agent; its worker goroutine (owned
// by wg, ended by ctx) answers commands in order.
func startSimAgent(ctx context.Context, broker, id string, wg *sync.WaitGroup) (*mqttc.Client, error) {
	will, _ := json.Marshal(wire.Status{AgentID: id, Status: wire.PresenceOffline})
	c, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: broker, ClientID: "evoclaw-" + id,
		Will: &mqttc.Message{Topic: wire.StatusTopic(id), Payload: will, QoS: 1, Retained: true}})
	if err != nil {
		return nil, fmt.Errorf("simulated agent %s: %w", id, err)
	}
	cmds := make(chan wire.Command, 256)
	if err := c.Subscribe(wire.CommandsTopic(id), 1, func(m mqttc.Message) {
		if cmd, err := wire.DecodeCommand(m.Payload); err == nil {
			select {
			case cmds <- cmd:
			default: // saturated: the orchestrator's deadline answers for it
			}
		}
	}); err != nil {
		c.Close()
		return nil, err
	}
	publish := func(topic string, v any, retained bool) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return c.Publish(ctx, mqttc.Message{Topic: topic, Payload: b, QoS: 1, Retained: retained})
	}
	if err := publish(wire.CapabilitiesTopic(id), wire.Capabilities{AgentID: id, Capabilities: id + " simulated agent"}, true); err != nil {
		c.Close()
		return nil, err
	}
	if err := publish(wire.StatusTopic(id), wire.Status{AgentID: id, Status: wire.PresenceOnline, Timestamp: time.Now().Unix()}, true); err != nil {
		c.Close()
		return nil, err
	}
	reply := func(payload any) {
		r, err := wire.NewReport(id, "simulated", wire.ReportResult, time.Now().Unix(), payload)
		if err == nil {
			_ = publish(wire.ReportsTopic(id), r, false)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case cmd := <-cmds:
				switch cmd.Command {
				case wire.CmdToolsList:
					reply(wire.ToolsList{RequestID: cmd.RequestID, Tools: []wire.ToolInfo{{Name: "noop", Description: "does nothing",
						Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}})
				case wire.CmdTool:
					reply(wire.ToolResult{Status: wire.StatusSuccess, Tool: "noop", Result: "ok", RequestID: cmd.RequestID})
				case wire.CmdPing:
					reply(wire.PingResult{Pong: true, RequestID: cmd.RequestID})
				}
			}
		}
	}()
	return c, nil
}

// startCPUProfile starts a CPU profile into path (nothing when path is
// empty) and returns what stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// writeHeapProfile writes the live heap to path (nothing when path is
// empty).
func writeHeapProfile(path string) error { return writeProfile("heap", path) }

// writeProfile writes the named runtime profile to path in its text form
// for goroutines, else in pprof's (nothing when path is empty).
func writeProfile(name, path string) error {
	if path == "" || path == ".goroutines" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	debug := 0
	if name == "goroutine" {
		debug = 1
	}
	if err := pprof.Lookup(name).WriteTo(f, debug); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/evoclaw/evoclaw/edge/pause"
	"github.com/evoclaw/evoclaw/orchestrator/chaos/child"
)

// idleSample is one reading of an idle process.
type idleSample struct {
	at      time.Duration // since the first reading
	anonKB  int64         // RssAnon
	written int64         // write_bytes of /proc/PID/io: what reached storage
}

// idleSeries is what benchIdle read of one process.
type idleSeries struct {
	name    string
	samples []idleSample
}

// readIdle reads RssAnon and write_bytes of pid.
func readIdle(pid int) (anonKB, written int64, err error) {
	m, err := readMem(pid)
	if err != nil {
		return 0, 0, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			written, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return m.Anon, written, err
		}
	}
	return 0, 0, fmt.Errorf("no write_bytes in /proc/%d/io", pid)
}

// summary is one line about s: private memory at the first and last
// reading and its largest, and the bytes written per minute.
func (s idleSeries) summary() string {
	first, last := s.samples[0], s.samples[len(s.samples)-1]
	most := first.anonKB
	for _, x := range s.samples {
		most = max(most, x.anonKB)
	}
	minutes := (last.at - first.at).Minutes()
	perMin := 0.0
	if minutes > 0 {
		perMin = float64(last.written-first.written) / minutes
	}
	return fmt.Sprintf("%-13s private %5.1f MB → %5.1f MB (largest %5.1f MB, %+.1f MB), written to storage %.0f bytes/min",
		s.name, mbKB(first.anonKB), mbKB(last.anonKB), mbKB(most), mbKB(last.anonKB-first.anonKB), perMin)
}

func mbKB(kb int64) float64 { return float64(kb) / 1024 }

// readyBroker is the broker URL in serve's ready line.
var readyBroker = regexp.MustCompile(`ready: broker (\S+),`)

// benchIdle runs an orchestrator (embedded broker, SQLite, HTTP API) and an
// edge agent connected to it, each a process on a fresh data directory,
// and leaves them idle for d after a settling pause, reading each one's
// private memory and the bytes it wrote to storage twenty times. Flash
// wear and memory that creeps up while nothing happens are what it shows.
func benchIdle(ctx context.Context, d time.Duration, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "evoclaw-idle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	say("evoclaw bench --idle %s: an orchestrator and an edge agent, idle, on fresh data directories in %s", d, dir)
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err == nil && fs.Type == 0x01021994 { // TMPFS_MAGIC
		say("  (the data directories are on tmpfs, where write_bytes sees no writes: set TMPDIR to a directory on the board's storage)")
	}
	conf := filepath.Join(dir, "evoclaw.toml")
	if err := os.WriteFile(conf, []byte("data_dir = \"serve\"\n[broker]\nlisten = \"127.0.0.1:0\"\nallow_anonymous = true\n[http]\nlisten = \"127.0.0.1:0\"\n"), 0o600); err != nil {
		return err
	}
	serve, err := startChild("serve", []string{"serve", "--config", conf}, io.Discard)
	if err != nil {
		return err
	}
	defer serve.Stop()
	line, err := serve.WaitReady(ctx)
	if err != nil {
		return err
	}
	m := readyBroker.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("no broker URL in serve's ready line %q", line)
	}
	edgeProc, err := startBenchEdge(ctx, dir, fmt.Sprintf("agent_id = \"idle-edge\"\ndata_dir = \"edge\"\n[mqtt]\nbroker = %q\n", m[1]))
	if err != nil {
		return err
	}
	defer edgeProc.Stop()
	const settle = 5 * time.Second // start-up's own writes and garbage
	if err := pause.For(ctx, settle); err != nil {
		return err
	}
	series := []*idleSeries{{name: "orchestrator"}, {name: "edge agent"}}
	pids := []int{serve.Pid(), edgeProc.Pid()}
	const readings = 20
	began := time.Now()
	for i := 0; i <= readings; i++ {
		if i > 0 {
			if err := pause.For(ctx, d/readings); err != nil {
				return err
			}
		}
		for j, pid := range pids {
			anon, written, err := readIdle(pid)
			if err != nil {
				return fmt.Errorf("read %s: %w", series[j].name, err)
			}
			series[j].samples = append(series[j].samples, idleSample{at: time.Since(began), anonKB: anon, written: written})
		}
	}
	say("idle for %s after %s of settling, %d readings each (private = RssAnon of /proc/PID/status; written = write_bytes of /proc/PID/io):", d, settle, readings+1)
	for _, s := range series {
		say("  %s", s.summary())
	}
	return nil
}

// startBenchEdge writes conf as dir/agent.toml and starts an edge agent
// process on it, returning once it is ready (stopped when that fails).
func startBenchEdge(ctx context.Context, dir, conf string) (*child.Process, error) {
	agentConf := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(agentConf, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return startReady(ctx, "edge", []string{"edge", "--config", agentConf})
}

// startReady starts this binary with args as a child and waits for its
// ready line.
func startReady(ctx context.Context, name string, args []string) (*child.Process, error) {
	p, err := startChild(name, args, io.Discard)
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitReady(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

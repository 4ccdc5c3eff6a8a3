package evoclawtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/mqttc"
	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/edge/wire"
	"github.com/evoclaw/evoclaw/persistence/sqlite"
)

// ReadyTimeout bounds how long an edge process may take to say it is ready.
const ReadyTimeout = 30 * time.Second

// EdgeSpec describes an `evoclaw edge` process.
type EdgeSpec struct {
	// ID is the agent id.
	ID string
	// BrokerURL is the broker it connects to, anonymously.
	BrokerURL string
	// SkillDirs are its skill directories; may be empty.
	SkillDirs []string
	// Extra is appended to its agent.toml ([builtin] tables and such).
	Extra string
}

// Edge is an `evoclaw edge` process that a test can kill and start again on
// the same data directory. Its methods are called from the test goroutine.
type Edge struct {
	t    testing.TB
	spec EdgeSpec
	conf string
	// DataDir is the agent's data directory; AuditDB its audit database.
	DataDir, AuditDB string

	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed once cmd is reaped
	stderr *testenv.Buffer
}

// StartEdge writes an agent.toml for spec, starts the agent and waits until
// it says it is ready. It is killed when the test ends.
func StartEdge(t testing.TB, spec EdgeSpec) *Edge {
	t.Helper()
	dir := t.TempDir()
	dirs, err := json.Marshal(spec.SkillDirs)
	if err != nil {
		t.Fatal(err)
	}
	e := &Edge{t: t, spec: spec, conf: filepath.Join(dir, "agent.toml"), DataDir: filepath.Join(dir, "data"), stderr: &testenv.Buffer{}}
	e.AuditDB = filepath.Join(e.DataDir, "audit.db")
	body := fmt.Sprintf("agent_id = %q\ndata_dir = %q\nheartbeat_interval = \"1s\"\n[mqtt]\nbroker = %q\n[skills]\ndirs = %s\n%s",
		spec.ID, e.DataDir, spec.BrokerURL, dirs, spec.Extra)
	if err := os.WriteFile(e.conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Kill()
		if t.Failed() {
			t.Logf("edge %s stderr (tail):\n%s", spec.ID, tail(e.stderr, 8000))
		}
	})
	e.Start()
	return e
}

// Start starts the agent (again) and waits until it is ready.
func (e *Edge) Start() {
	e.t.Helper()
	if e.cmd != nil {
		e.t.Fatalf("edge %s: already running", e.spec.ID)
	}
	cmd := exec.Command(Binary(e.t), "edge", "--config", e.conf)
	cmd.Stderr = e.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.cmd, e.exited = cmd, make(chan struct{})
	ready := make(chan struct{})
	exited := e.exited
	go func() { // ends when the agent's stdout closes, at its exit
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "ready") {
				close(ready)
				said = true
			}
		}
		cmd.Wait() // the exit status of a killed agent says nothing
		close(exited)
	}()
	select {
	case <-ready:
	case <-exited:
		e.cmd = nil
		e.t.Fatalf("edge %s exited before it was ready; stderr:\n%s", e.spec.ID, tail(e.stderr, 8000))
	case <-time.After(ReadyTimeout):
		e.t.Fatalf("edge %s not ready within %v; stderr:\n%s", e.spec.ID, ReadyTimeout, tail(e.stderr, 8000))
	}
}

// Pid is the agent's process id, or 0 while it is stopped.
func (e *Edge) Pid() int {
	if e.cmd == nil {
		return 0
	}
	return e.cmd.Process.Pid
}

// Kill sends SIGKILL to the agent alone (not to its process group: what
// its tools do then is what the test is about) and waits for its exit.
// It does nothing while the agent is stopped.
func (e *Edge) Kill() {
	if e.cmd == nil {
		return
	}
	e.cmd.Process.Signal(syscall.SIGKILL) // fails only if it already exited
	<-e.exited
	e.cmd = nil
}

// Stderr returns what the agent wrote to stderr over all its starts.
func (e *Edge) Stderr() string { return e.stderr.String() }

// Query runs a read-only SQL query on the agent's audit database.
func (e *Edge) Query(q string) [][]any {
	e.t.Helper()
	res, err := sqlite.QueryReadOnly(context.Background(), e.AuditDB, q)
	if err != nil {
		e.t.Fatalf("query %s: %v", e.AuditDB, err)
	}
	return res.Rows
}

// SendTool publishes a tool command for the agent on its broker, QoS 1,
// and returns without waiting for an answer.
func (e *Edge) SendTool(requestID, tool string, params map[string]any) {
	e.t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd, err := wire.NewCommand(wire.CmdTool, requestID, wire.ToolPayload{Tool: tool, Parameters: p, RequestID: requestID})
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := mqttc.Connect(ctx, mqttc.Options{BrokerURL: e.spec.BrokerURL, ClientID: "evoclawtest-" + requestID})
	if err != nil {
		e.t.Fatalf("connect to send %s: %v", requestID, err)
	}
	defer cl.Close()
	if err := cl.Publish(ctx, mqttc.Message{Topic: wire.CommandsTopic(e.spec.ID), Payload: b, QoS: 1}); err != nil {
		e.t.Fatalf("send %s: %v", requestID, err)
	}
}

// PidsWith lists the processes whose command line contains token, other
// than the caller.
func PidsWith(token string) []int {
	entries, _ := os.ReadDir("/proc") // unreadable: nothing found, and the caller's wait fails loudly
	var out []int
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + en.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(token)) || zombie(pid) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// tail is the last n bytes of what b holds.
func tail(b *testenv.Buffer, n int) string {
	str := b.String()
	return str[max(0, len(str)-n):]
}

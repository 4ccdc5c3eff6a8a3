package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
)

// proc is an evoclaw process a test started; it ends with the test.
type proc struct {
	cmd    *exec.Cmd
	stderr testenv.Buffer
	once   sync.Once     // ends it once
	done   chan struct{} // closed when its stdout is drained
}

// procSpec says when a started process is ready and how the test's end
// stops it. The zero value waits up to 30s for a line holding "ready" and
// kills the process at the end.
type procSpec struct {
	Ready  *regexp.Regexp // matches its stdout line saying it is ready; nil means `ready`
	Within time.Duration  // how long it may take to say so; 0 means 30s
	// Interrupt stops it with SIGINT, and SIGKILL 10s later if it still
	// runs, rather than SIGKILL at once.
	Interrupt bool
}

var anyReady = regexp.MustCompile(`ready`)

// startProc runs the evoclaw binary with args and returns once a line of
// its stdout matches spec.Ready, with that line's submatches.
func startProc(t *testing.T, spec procSpec, args ...string) (*proc, []string) {
	t.Helper()
	if spec.Ready == nil {
		spec.Ready = anyReady
	}
	if spec.Within == 0 {
		spec.Within = 30 * time.Second
	}
	p := &proc{cmd: exec.Command(evoclawBinary(t), args...), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := spec.Ready.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case lines <- m:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if spec.Interrupt {
			p.interrupt(10 * time.Second)
		} else {
			p.kill()
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", args[0], p.stderr.String())
		}
	})
	select {
	case m := <-lines:
		return p, m
	case <-p.done:
		t.Fatalf("evoclaw %s exited before ready; stderr:\n%s", args[0], p.stderr.String())
	case <-time.After(spec.Within):
		t.Fatalf("evoclaw %s not ready; stderr:\n%s", args[0], p.stderr.String())
	}
	return nil, nil
}

// kill SIGKILLs the process and waits for it; later calls do nothing.
func (p *proc) kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		_ = p.cmd.Wait()
	})
}

// interrupt sends SIGINT and waits for the process, killing it after
// grace; later calls, and calls after kill, do nothing.
func (p *proc) interrupt(grace time.Duration) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		exited := make(chan struct{})
		go func() { <-p.done; _ = p.cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-exited
		}
	})
}

// serveReady is the line `evoclaw serve` prints once ready, with its broker
// URL and its API's base URL.
var serveReady = regexp.MustCompile(`ready: broker (\S+), audit .*, api (\S+)`)

// startScriptedServe installs the shipped demo skill in dir/skills and
// starts `evoclaw serve` (id nodeID, anonymous broker and HTTP API on
// loopback ports, the scripted model playing transcript) with its data in
// dir/node. It returns the broker URL.
func startScriptedServe(t *testing.T, dir, nodeID, transcript string) string {
	t.Helper()
	return startScriptedServeWith(t, dir, nodeID, transcript, "")
}

// startScriptedServeWith is startScriptedServe with the lines of tail at
// the end of its evoclaw.toml.
func startScriptedServeWith(t *testing.T, dir, nodeID, transcript, tail string) string {
	t.Helper()
	_, api := startScriptedServeProc(t, dir, nodeID, transcript, tail)
	return api
}

// startScriptedServeProc is startScriptedServeWith that returns the
// process too.
func startScriptedServeProc(t *testing.T, dir, nodeID, transcript, tail string) (*proc, string) {
	t.Helper()
	if code, _, errOut := runBinary(t, "", "skills", "install", "demo", filepath.Join(dir, "skills")); code != 0 {
		t.Fatalf("skills install: %s", errOut)
	}
	writeTestFile(t, filepath.Join(dir, "transcript.json"), transcript)
	writeTestFile(t, filepath.Join(dir, "evoclaw.toml"), scriptedServeTOML(fmt.Sprintf("node_id = %q\n", nodeID), filepath.Join(dir, "transcript.json"), tail))
	p, m := startProc(t, procSpec{Ready: serveReady}, "serve", "--config", filepath.Join(dir, "evoclaw.toml"), "--data-dir", filepath.Join(dir, "node"))
	return p, m[1]
}

// scriptedServeTOML is an evoclaw.toml: the lines of head, an anonymous
// broker and the HTTP API on loopback ports, the scripted model playing
// the transcript file, then the lines of tail.
func scriptedServeTOML(head, transcript, tail string) string {
	return head + fmt.Sprintf(`[broker]
listen = "127.0.0.1:0"
allow_anonymous = true
[http]
listen = "127.0.0.1:0"
[llm]
provider = "scripted"
transcript = %q
`, transcript) + tail
}

// writeDemoAgent writes dir/agent.toml for the agent pi1 (data in dir/edge,
// heartbeat 1s, the skills of dir/skills) on broker, with capabilities caps
// and extra lines appended to its [skills] table.
func writeDemoAgent(t *testing.T, dir, broker, caps, extra string) string {
	t.Helper()
	path := filepath.Join(dir, "agent.toml")
	writeTestFile(t, path, fmt.Sprintf(`agent_id = "pi1"
data_dir = %q
heartbeat_interval = "1s"
capabilities = %q
[mqtt]
broker = %q
[skills]
dirs = [%q]
%s`, filepath.Join(dir, "edge"), caps, broker, filepath.Join(dir, "skills"), extra))
	return path
}

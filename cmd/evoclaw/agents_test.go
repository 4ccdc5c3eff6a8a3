package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/evoclaw/evoclaw/edge/testenv"
	"github.com/evoclaw/evoclaw/orchestrator"
	"github.com/evoclaw/evoclaw/orchestrator/llm/scripted"
)

// runCLI runs the command in-process and returns its stdout; it fails the
// test on a non-zero exit unless wantCode says otherwise.
func runCLI(t *testing.T, wantCode int, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != wantCode {
		t.Fatalf("evoclaw %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, wantCode, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

var passwordLine = regexp.MustCompile(`(?m)^` + agentPasswordEnv + `=(\S+)$`)

// TestAgentsAddServeEdgeRemove follows an operator: `agents add` prints the
// lines of agent.toml and the password; an edge process configured with
// them joins a node that allows no anonymous client; one with a wrong
// password is refused and exits; `agents remove` ends the agent's session.
func TestAgentsAddServeEdgeRemove(t *testing.T) {
	t.Parallel() // a slow test that mostly waits: see "Slow tests run in parallel" in cluster_test.go
	dir := t.TempDir()
	out, _ := runCLI(t, 0, "agents", "add", "pi-sec", "--data-dir", dir, "--bcrypt-cost", "4", "--broker", "tcp://BROKER")
	m := passwordLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no password line in:\n%s", out)
	}
	password := m[1]
	for _, want := range []string{`agent_id = "pi-sec"`, `username = "pi-sec"`, `password_env = "` + agentPasswordEnv + `"`, `broker = "tcp://BROKER"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("agents add output lacks %q:\n%s", want, out)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "mqtt-users"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("users file: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mqtt-users")); bytes.Contains(b, []byte(password)) {
		t.Fatal("the users file holds the password in clear")
	}
	list, _ := runCLI(t, 0, "agents", "list", "--data-dir", dir)
	if !regexp.MustCompile(`(?m)^pi-sec\s+agent\s`).MatchString(list) {
		t.Fatalf("agents list:\n%s", list)
	}
	runCLI(t, 1, "agents", "add", "pi-sec", "--data-dir", dir) // exists, no --rotate

	p, err := scripted.Parse([]byte(`{"name":"idle","turns":[{"content":"ok"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	node, err := orchestrator.Start(ctx, orchestrator.Config{DataDir: dir, Broker: orchestrator.BrokerConf{Listen: "127.0.0.1:0"}}, orchestrator.Options{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()

	skills, err := filepath.Abs("../../testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	block := out[strings.Index(out, "agent_id"):strings.Index(out, "# its environment")]
	conf := strings.Replace(block, "tcp://BROKER", node.BrokerURL(), 1) + "\n[skills]\ndirs = [\"" + skills + "\"]\n"
	conf = strings.Replace(conf, "[mqtt]", "data_dir = \"data\"\nheartbeat_interval = \"1s\"\n\n[mqtt]", 1)

	// The wrong password: refused at once, the process exits with an error.
	bad := edgeProcess(t, conf, "wrong-"+password)
	if err := bad.wait(20 * time.Second); err == nil || !strings.Contains(bad.stderr.String(), "refused") {
		t.Fatalf("edge with a wrong password: exit %v, stderr:\n%s", err, bad.stderr.String())
	}

	good := edgeProcess(t, conf, password)
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := node.WaitForAgents(wctx, 1); err != nil {
		t.Fatalf("%v; edge stderr:\n%s", err, good.stderr.String())
	}

	runCLI(t, 0, "agents", "remove", "pi-sec", "--data-dir", dir)
	testenv.Eventually(t, 15*time.Second, func() bool { return len(node.Catalog().Online()) == 0 },
		"the removed agent's session ends and it is marked offline")
}

// edgeProc is an `evoclaw edge` child process of a test.
type edgeProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer // read only after wait
	done   chan error
}

// edgeProcess starts `evoclaw edge` with conf as agent.toml and password in
// its environment; it is killed when the test ends.
func edgeProcess(t *testing.T, conf, password string) *edgeProc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.toml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &edgeProc{cmd: exec.Command(evoclawBinary(t), "edge", "--config", path), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	e.cmd.Env = append(os.Environ(), agentPasswordEnv+"="+password)
	e.cmd.Stderr = e.stderr
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { e.done <- e.cmd.Wait() }()
	t.Cleanup(func() {
		_ = e.cmd.Process.Kill()
		err := <-e.done
		e.done <- err
		if t.Failed() {
			t.Logf("edge stderr:\n%s", e.stderr.String())
		}
	})
	return e
}

// wait waits for the process to exit and returns its error.
func (e *edgeProc) wait(timeout time.Duration) error {
	select {
	case err := <-e.done:
		e.done <- err
		return err
	case <-time.After(timeout):
		return context.DeadlineExceeded
	}
}

func TestAgentsUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"agents"}, 2, "needs add, list or remove"},
		{[]string{"agents", "grant"}, 2, "want add, list or remove"},
		{[]string{"agents", "add"}, 2, "evoclaw agents add NAME"},
		{[]string{"agents", "add", "a", "b", "--data-dir", dir}, 2, "evoclaw agents add NAME"},
		{[]string{"agents", "add", "bad/name", "--data-dir", dir}, 1, "character '/' not allowed"},
		{[]string{"agents", "add", "pi__kitchen", "--data-dir", dir}, 1, `"pi__kitchen": must not hold "__" or end with '_'`},
		{[]string{"agents", "add", "pi_", "--data-dir", dir}, 1, `"pi_": must not hold "__" or end with '_'`},
		{[]string{"agents", "add", "x", "--role", "admin", "--data-dir", dir}, 1, `role "admin"`},
		{[]string{"agents", "add", "x", "--bcrypt-cost", "40", "--data-dir", dir}, 1, "bcrypt cost 40"},
		{[]string{"agents", "remove", "ghost", "--data-dir", dir}, 1, "no such mqtt identity: ghost"},
		{[]string{"agents", "list", "extra", "--data-dir", dir}, 2, "takes no arguments"},
	}
	for _, tt := range tests {
		_, stderr := runCLI(t, tt.code, tt.args...)
		if !strings.Contains(stderr, tt.want) {
			t.Errorf("evoclaw %v: stderr %q does not mention %q", tt.args, stderr, tt.want)
		}
	}
	out, _ := runCLI(t, 0, "agents", "list", "--data-dir", dir)
	if !strings.Contains(out, "no identities yet") {
		t.Fatalf("list on an empty node: %q", out)
	}
}

// TestAgentsHelp: every way of asking agents for help prints its usage on
// stdout and exits 0; a command's --help lists its flags there too.
func TestAgentsHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "-help", "help"} {
		out, errOut := runCLI(t, 0, "agents", arg)
		for _, want := range []string{"evoclaw agents add NAME", "evoclaw agents list", "evoclaw agents remove NAME"} {
			if !strings.Contains(out, want) || errOut != "" {
				t.Errorf("agents %s: stdout lacks %q:\nstdout: %s\nstderr: %s", arg, want, out, errOut)
			}
		}
	}
	out, errOut := runCLI(t, 0, "agents", "add", "--help")
	if !strings.Contains(out, "-rotate") || errOut != "" {
		t.Errorf("agents add --help:\nstdout: %s\nstderr: %s", out, errOut)
	}
}

// TestAgentsAddBrokerFromConfig: with the node's evoclaw.toml, the
// agent.toml lines that `agents add` prints name its embedded broker's
// port, and its TLS listener when it has one; --broker still wins, and
// without a file the placeholder stays. Before, they always said
// tcp://ORCHESTRATOR-HOST:1883, so an agent of a node listening on
// another port, or on TLS alone, copied a broker line that failed.
func TestAgentsAddBrokerFromConfig(t *testing.T) {
	tests := []struct {
		name, broker string // the node's [broker] lines
		flags        []string
		want         string
	}{
		{"no config", "", nil, "tcp://ORCHESTRATOR-HOST:1883"},
		{"plain listener on all addresses", "listen = \"0.0.0.0:42883\"\n", nil, "tcp://ORCHESTRATOR-HOST:42883"},
		{"plain listener on one address", "listen = \"192.0.2.7:42884\"\n", nil, "tcp://192.0.2.7:42884"},
		{"loopback listener", "listen = \"127.0.0.1:42885\"\n", nil, "tcp://ORCHESTRATOR-HOST:42885"},
		{"TLS listener", "tls_listen = \"0.0.0.0:42886\"\ntls_cert_file = \"b.crt\"\ntls_key_file = \"b.key\"\n", nil, "tls://ORCHESTRATOR-HOST:42886"},
		{"--broker wins", "listen = \"0.0.0.0:42883\"\n", []string{"--broker", "tcp://pi-hub.lan:1883"}, "tcp://pi-hub.lan:1883"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"agents", "add", "pi-port", "--data-dir", filepath.Join(dir, "data"), "--bcrypt-cost", "4"}
			if tt.name != "no config" {
				conf := filepath.Join(dir, "evoclaw.toml")
				writeTestFile(t, conf, "[broker]\n"+tt.broker)
				args = append(args, "--config", conf)
			}
			out, _ := runCLI(t, 0, append(args, tt.flags...)...)
			if want := "broker = \"" + tt.want + "\"\n"; !strings.Contains(out, want) {
				t.Errorf("agents add prints no %q:\n%s", want, out)
			}
			if tls := strings.Contains(out, "# ca_file ="); tls != strings.HasPrefix(tt.want, "tls://") {
				t.Errorf("the ca_file hint is printed: %v, want it with a tls:// broker only:\n%s", tls, out)
			}
		})
	}
}

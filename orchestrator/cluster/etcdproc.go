package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// etcdReadyWithin bounds how long a local etcd may take to be healthy.
const etcdReadyWithin = 30 * time.Second

// LocalEtcd is a one-member etcd child process on loopback ports, for the
// commands that run a cluster on one machine (`evoclaw chaos node-kill`,
// `evoclaw load --cluster`).
type LocalEtcd struct {
	// Addr is its client address, host:port, for Config.Etcd.
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartLocalEtcd runs Debian's etcd (etcd-server) from PATH with its data
// in dir/etcd and its output in dir/etcd.log, and waits until it is
// healthy.
func StartLocalEtcd(ctx context.Context, dir string) (*LocalEtcd, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd not found (Debian: apt-get install etcd-server): %w", err)
	}
	client, err := FreeLoopbackPort()
	if err != nil {
		return nil, err
	}
	peer, err := FreeLoopbackPort()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "etcd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	c, p := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
	e := &LocalEtcd{Addr: fmt.Sprintf("127.0.0.1:%d", client), done: make(chan struct{}),
		cmd: exec.Command(bin, "--name", "local", "--data-dir", filepath.Join(dir, "etcd"),
			"--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p,
			"--initial-advertise-peer-urls", p, "--initial-cluster", "local="+p)}
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	go func() { _ = e.cmd.Wait(); close(e.done) }()
	ctx, cancel := context.WithTimeout(ctx, etcdReadyWithin)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for probeEtcd([]string{e.Addr}, nil) != nil {
		select {
		case <-e.done:
			return nil, fmt.Errorf("etcd exited before it was healthy (see %s)", filepath.Join(dir, "etcd.log"))
		case <-ctx.Done():
			_ = e.Stop()
			return nil, fmt.Errorf("etcd not healthy on %s: %w", e.Addr, ctx.Err())
		case <-t.C:
		}
	}
	return e, nil
}

// Stop ends etcd (SIGTERM, SIGKILL after 5 s) and waits for it.
func (e *LocalEtcd) Stop() error {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
		return nil
	case <-time.After(5 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
		return errors.New("etcd did not stop within 5s; killed")
	}
}

// FreeLoopbackPort returns a loopback TCP port that was free when checked
// (for the processes of a cluster on one machine).
func FreeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

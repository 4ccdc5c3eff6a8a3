package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// etcdStartTimeout bounds an etcd start: it elects itself leader first.
const etcdStartTimeout = 30 * time.Second

// StartEtcd starts a one-member etcd (Debian's etcd-server) on a free
// loopback client port with a fresh data directory, kept across
// Restart. Without etcd the test is skipped, or fails when
// EVOCLAW_REQUIRE_PEERS=1.
func StartEtcd(t testing.TB) *Process {
	t.Helper()
	path := Find(t, "etcd", "etcd-server")
	dir := t.TempDir()
	return Start(t, Spec{
		Name: "etcd",
		Path: path,
		Args: func(port int) []string {
			client := fmt.Sprintf("http://127.0.0.1:%d", port)
			peer := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
			return []string{"--name", "evoclaw-test", "--data-dir", filepath.Join(dir, "data"),
				"--listen-client-urls", client, "--advertise-client-urls", client,
				"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
				"--initial-cluster", "evoclaw-test=" + peer}
		},
		// It accepts connections before it has a leader; it logs
		// "ready to serve client requests" once it answers them.
		Ready: func(addr string, log []byte) error {
			if !bytes.Contains(log, []byte("ready to serve client requests")) {
				return errors.New(`no "ready to serve client requests" in its log yet`)
			}
			return Accepts(addr)
		},
		StartTimeout: etcdStartTimeout,
	})
}
